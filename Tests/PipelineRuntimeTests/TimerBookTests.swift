import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import Testing

@Suite("Timer book: pending expiries fire once, in due order, where their partition is owned")
struct TimerBookTests {
    static let start = try! Timestamp(rfc3339: "2026-03-01T12:00:00Z")

    static func timer(_ id: String, in seconds: Int64, partition: Int32 = 0) -> TimerBook.PendingTimer {
        let identity = MessageIdentity(messageId: id, eventId: id, campaignId: "c", recipientId: "r", platform: .fcm, template: "timer")
        return TimerBook.PendingTimer(identity: identity, expiresAt: start.adding(seconds: seconds), partition: partition)
    }

    /// A book that fired message m's timer due at +1 s, then scheduled m's newer timer, due at +10 s (its send, read
    /// again after a rebalance or a crash, was delivered again).
    static func firedThenDeliveredAgain() -> TimerBook {
        let book = TimerBook()
        book.schedule(timer("m", in: 1))
        #expect(book.takeDue(at: start.adding(seconds: 2), in: [0]).count == 1)
        book.schedule(timer("m", in: 10))
        return book
    }

    @Test("due timers come out earliest first; the others stay pending")
    func dueInOrder() {
        let book = TimerBook()
        for (index, seconds) in [50, 10, 40, 20, 30, 5_000].enumerated() {
            book.schedule(Self.timer("m\(index)", in: Int64(seconds)))
        }
        let due = book.takeDue(at: Self.start.adding(seconds: 45), in: [0])
        #expect(due.map(\.identity.messageId) == ["m1", "m3", "m4", "m2"])
        #expect(book.count == 2)
        #expect(book.takeDue(at: Self.start.adding(seconds: 45), in: [0]).isEmpty, "fired once")
        #expect(book.takeDue(at: Self.start.adding(seconds: 10_000), in: [0]).map(\.identity.messageId) == ["m0", "m5"])
    }

    /// Found by review: a delivered timer is scheduled here once its record is acknowledged. Acknowledged late, after
    /// the partition's next owner had read the record, fired the timer and this book had read its tombstone, the
    /// timer came back here, pending, and fired again were the partition assigned here again.
    @Test("a timer whose tombstone is read while its record is being written is not scheduled when the record is acknowledged")
    func tombstoneReadWhileArming() {
        let book = TimerBook()
        book.beginArming(Self.timer("fired-elsewhere", in: 5))
        book.remove(messageId: "fired-elsewhere", retiring: Self.start.adding(seconds: 5))
        book.finishArming(Self.timer("fired-elsewhere", in: 5))
        #expect(book.count == 0)
        // A tombstone of the message's earlier timer does not retire the newer one being written.
        book.beginArming(Self.timer("delivered-again", in: 10))
        book.remove(messageId: "delivered-again", retiring: Self.start.adding(seconds: 1))
        book.finishArming(Self.timer("delivered-again", in: 10))
        // Nor does anything retire a timer whose record is acknowledged before any tombstone.
        book.beginArming(Self.timer("plain", in: 20))
        book.finishArming(Self.timer("plain", in: 20))
        #expect(book.count == 2)
        #expect(book.takeDue(at: Self.start.adding(seconds: 30), in: [0]).map(\.identity.messageId) == ["delivered-again", "plain"])
        // Nothing is kept of the armings once acknowledged.
        #expect(book.armingCount == 0)
    }

    @Test("a replaced timer fires once, at its new time; a removed one never")
    func replacedAndRemoved() {
        let book = TimerBook()
        book.schedule(Self.timer("moved", in: 10))
        book.schedule(Self.timer("moved", in: 100))
        book.schedule(Self.timer("gone", in: 10))
        book.remove(messageId: "gone")
        #expect(book.takeDue(at: Self.start.adding(seconds: 50), in: [0]).isEmpty)
        #expect(book.takeDue(at: Self.start.adding(seconds: 150), in: [0]).map(\.identity.messageId) == ["moved"])
        #expect(book.count == 0)
    }

    @Test("a fired timer read back from the topic before its tombstone is not brought back")
    func firedIsNotRescheduled() {
        let book = TimerBook()
        book.schedule(Self.timer("m", in: 1))
        #expect(book.takeDue(at: Self.start.adding(seconds: 2), in: [0]).count == 1)
        book.schedule(Self.timer("m", in: 1))
        #expect(book.count == 0)
    }

    @Test("a newer timer of a message whose timer fired here is scheduled: its event was delivered again")
    func newerTimerAfterFiring() {
        // The send, read again after a rebalance, is delivered again before the first timer's tombstone is read back.
        let book = Self.firedThenDeliveredAgain()
        #expect(book.count == 1, "the new delivery's countdown is pending")
        #expect(book.takeDue(at: Self.start.adding(seconds: 11), in: [0]).map(\.expiresAt) == [Self.start.adding(seconds: 10)])
    }

    @Test("a tombstone retires only the timer it names; one written here that lands after a newer timer asks for it again")
    func tombstoneRetiresTheTimerItNames() {
        let book = Self.firedThenDeliveredAgain()
        // This book's tombstone of the timer due at +1 s, read back after the newer timer's record.
        let again = book.remove(messageId: "m", retiring: Self.start.adding(seconds: 1), writtenHere: true, at: Self.start.adding(seconds: 2))
        #expect(again == Self.timer("m", in: 10), "the newer timer is written again after the tombstone")
        #expect(book.count == 1)
        // Another instance's tombstone of an older timer keeps the newer one, and asks nothing of this book.
        #expect(book.remove(messageId: "m", retiring: Self.start.adding(seconds: 5)) == nil)
        #expect(book.count == 1)
        // The tombstone of the newer timer itself, or one that names no timer, retires it.
        #expect(book.remove(messageId: "m", retiring: Self.start.adding(seconds: 10)) == nil)
        #expect(book.count == 0)
        book.schedule(Self.timer("n", in: 1))
        book.remove(messageId: "n")
        #expect(book.count == 0)
        book.schedule(Self.timer("o", in: 1))
        #expect(book.remove(messageId: "o", retiring: Self.start.adding(seconds: 2)) == nil)
        #expect(book.count == 0, "a tombstone retires an earlier timer than the one it names too")
        // A tombstone's header round-trips the due time it names exactly (nanoseconds included).
        let due = Timestamp(secondsSince1970: 1_795_688_216, nanoseconds: 827_198_028)
        let fired = TimerBook.PendingTimer(identity: Self.timer("m", in: 0).identity, expiresAt: due, partition: 3)
        let tombstone = TimerBook.tombstone(of: fired, topic: "t")
        #expect(tombstone.value == nil && tombstone.partition == 3)
        #expect(TimerBook.retiredDueTime(of: tombstone.headers) == due)
        // It carries its writer's header, which tells the writer its own tombstone when it reads it back.
        let writer = KafkaHeader(key: "writer", string: "this-instance")
        let written = TimerBook.tombstone(of: fired, topic: "t", writer: [writer])
        #expect(written.headers.contains(writer) && TimerBook.retiredDueTime(of: written.headers) == due)
    }

    @Test("the timer fired on two instances: only this book's own tombstone asks for the newer timer again, read after the other's")
    func ownTombstoneIsToldByItsWriter() {
        // The partition moved while the timer due at +1 s came due: it fired here and on its new owner, and each
        // wrote a tombstone naming it. The send, read again, was delivered again: a newer timer, due at +10 s.
        let book = Self.firedThenDeliveredAgain()
        let read = Self.start.adding(seconds: 3)
        // The other instance's tombstone comes first: it lands after the newer record, but its writer rewrites that.
        #expect(book.remove(messageId: "m", retiring: Self.start.adding(seconds: 1), writtenHere: false, at: read) == nil)
        // This book's own, later in the topic: after the other's rewrite too, so the newer timer is written again.
        #expect(
            book.remove(messageId: "m", retiring: Self.start.adding(seconds: 1), writtenHere: true, at: read) == Self.timer("m", in: 10),
            "this book's own tombstone landed after the newer timer's record: written again after it"
        )
        #expect(book.count == 1)
    }

    @Test("a newer timer already due when this book reads its tombstone back is not written again")
    func dueNewerTimerIsNotWrittenAgain() {
        // This book read its tombstone of the +1 s timer late (stalled): the newer timer, due at +10 s, has come due
        // meanwhile, and its owner fired it and tombstoned it. Written again now, after that tombstone, it would
        // come back in every book and fire a second time.
        let book = Self.firedThenDeliveredAgain()
        #expect(book.remove(messageId: "m", retiring: Self.start.adding(seconds: 1), writtenHere: true, at: Self.start.adding(seconds: 11)) == nil)
        #expect(book.count == 1, "still pending here until its own tombstone is read")
        #expect(book.remove(messageId: "m", retiring: Self.start.adding(seconds: 10)) == nil)
        #expect(book.count == 0)
    }

    @Test("a due timer of a partition owned elsewhere waits until its partition is owned here")
    func otherPartitions() {
        let book = TimerBook()
        book.schedule(Self.timer("here", in: 1, partition: 0))
        book.schedule(Self.timer("there", in: 1, partition: 7))
        #expect(book.takeDue(at: Self.start.adding(seconds: 2), in: [0]).map(\.identity.messageId) == ["here"])
        #expect(book.takeDue(at: Self.start.adding(seconds: 3), in: [0]).isEmpty)
        #expect(book.takeDue(at: Self.start.adding(seconds: 4), in: [0, 7]).map(\.identity.messageId) == ["there"])
    }

    @Test("many replacements keep the book exact (stale heap entries are dropped)")
    func manyReplacements() {
        let book = TimerBook()
        for round in 0..<5 {
            for index in 0..<1_000 { book.schedule(Self.timer("m\(index)", in: Int64(1_000 + round * 10 + index % 7))) }
        }
        #expect(book.count == 1_000)
        #expect(book.takeDue(at: Self.start.adding(seconds: 1_039), in: [0]).isEmpty, "only the last schedule of each counts")
        let due = book.takeDue(at: Self.start.adding(seconds: 2_000), in: [0])
        #expect(due.count == 1_000)
        #expect(Set(due.map(\.identity.messageId)).count == 1_000)
        #expect(due.allSatisfy { $0.expiresAt >= Self.start.adding(seconds: 1_040) })
        #expect(zip(due, due.dropFirst()).allSatisfy { $0.expiresAt <= $1.expiresAt })
    }

    @Test("a timer moved to another partition at the same time fires in its new partition")
    func movedPartition() {
        let book = TimerBook()
        book.schedule(Self.timer("m", in: 1, partition: 7))
        #expect(book.takeDue(at: Self.start.adding(seconds: 2), in: [0]).isEmpty, "parked: partition 7 is owned elsewhere")
        book.schedule(Self.timer("m", in: 1, partition: 0))
        #expect(book.takeDue(at: Self.start.adding(seconds: 3), in: [0]).map(\.partition) == [0])
        #expect(book.takeDue(at: Self.start.adding(seconds: 4), in: [0, 7]).isEmpty, "fired once")
    }

    @Test("timers parked for a partition owned elsewhere do not pile up once their owner tombstones them")
    func parkedEntriesArePruned() {
        let book = TimerBook()
        for index in 0..<3_000 { book.schedule(Self.timer("elsewhere-\(index)", in: 1, partition: 7)) }
        #expect(book.takeDue(at: Self.start.adding(seconds: 2), in: [0]).isEmpty)
        #expect(book.parkedCount == 3_000)
        for index in 0..<3_000 { book.remove(messageId: "elsewhere-\(index)") }
        book.schedule(Self.timer("here", in: 1, partition: 0))
        #expect(book.takeDue(at: Self.start.adding(seconds: 3), in: [0]).map(\.identity.messageId) == ["here"])
        #expect(book.parkedCount == 0)
    }
}
