import Foundation
import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import Testing

@Suite("Decision times: the instants sends were judged at")
struct DecisionTimesTests {
    private let start = Timestamp(secondsSince1970: 1_800_000_000, nanoseconds: 0)

    private func later(_ milliseconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: start.secondsSince1970 + milliseconds / 1_000, nanoseconds: Int32(milliseconds % 1_000) * 1_000_000)
    }

    @Test("new offsets are judged now; offsets judged before keep their instant, and change nothing")
    func offsetsReadAgainKeepTheirInstant() {
        let times = DecisionTimes()
        let first = times.judge([10, 11, 12], of: 0, now: start)
        #expect(first.instants == [start, start, start] && first.changed)
        let again = times.judge([11, 12], of: 0, now: later(5_000))
        #expect(again.instants == [start, start])
        #expect(!again.changed, "nothing new to write for offsets already held")
        let mixed = times.judge([12, 13], of: 0, now: later(5_000))
        #expect(mixed.instants == [start, later(5_000)] && mixed.changed)
        #expect(times.ranges(of: 0) == [.init(first: 10, last: 12, decidedAt: start), .init(first: 13, last: 13, decidedAt: later(5_000))])
        #expect(times.ranges(of: 1).isEmpty, "partitions are apart")
    }

    @Test("batches within 100 ms of the partition's last instant extend its range at that instant; later ones start a range")
    func batchesCloseTogetherShareARange() {
        let times = DecisionTimes()
        _ = times.judge([0, 1], of: 3, now: start)
        #expect(times.judge([2, 5], of: 3, now: later(99)).instants == [start, start])
        #expect(times.ranges(of: 3) == [.init(first: 0, last: 5, decidedAt: start)])
        #expect(times.judge([6], of: 3, now: later(100)).instants == [later(100)])
        #expect(times.ranges(of: 3).count == 2)
        // A clock that went back starts a range of its own rather than judging at a later instant.
        #expect(times.judge([7], of: 3, now: later(50)).instants == [later(50)])
    }

    @Test("ranges the group committed past are dropped, and none before the committed offset are taken from a record")
    func committedRangesAreDropped() {
        let times = DecisionTimes()
        _ = times.judge([0, 1], of: 0, now: start)
        _ = times.judge([2, 3], of: 0, now: later(1_000))
        times.committed(2, of: 0)
        #expect(times.ranges(of: 0) == [.init(first: 2, last: 3, decidedAt: later(1_000))])
        times.committed(1, of: 0)
        #expect(times.ranges(of: 0).count == 1, "a committed offset never goes back")
        times.merge([.init(first: 0, last: 1, decidedAt: start), .init(first: 4, last: 4, decidedAt: start)], of: 0)
        #expect(times.ranges(of: 0).map(\.first) == [2, 4])
        times.committed(4, of: 0)
        #expect(times.ranges(of: 0) == [.init(first: 4, last: 4, decidedAt: start)], "a range is kept while its last offset is not committed")
    }

    @Test("a record merged in adds only the offsets no range holds: the first instant recorded for an offset stays")
    func firstRecordedInstantWins() {
        let times = DecisionTimes()
        times.merge([.init(first: 0, last: 4, decidedAt: start)], of: 0)
        // The writer extended its range at the same instant: 5...9 are new, and extend the range held.
        times.merge([.init(first: 0, last: 9, decidedAt: start)], of: 0)
        #expect(times.ranges(of: 0) == [.init(first: 0, last: 9, decidedAt: start)])
        // A late record of another writer with another instant for offsets held already changes nothing there.
        times.merge([.init(first: 3, last: 12, decidedAt: later(700))], of: 0)
        #expect(times.ranges(of: 0).last == .init(first: 10, last: 12, decidedAt: later(700)))
        #expect(times.judge([4, 9, 11], of: 0, now: later(9_000)).instants == [start, start, later(700)])
        #expect(DecisionTimes.uncovered(.init(first: 0, last: 20, decidedAt: start), by: times.ranges(of: 0)) == [.init(first: 13, last: 20, decidedAt: start)])
    }

    @Test("a record holds every range of its partition and reads back the same; anything else is not one")
    func recordsRoundTrip() throws {
        let times = DecisionTimes()
        _ = times.judge([7, 8], of: 2, now: Timestamp(secondsSince1970: 1_800_000_000, nanoseconds: 123_456_789))
        _ = times.judge([9], of: 2, now: later(3_000))
        let record = times.record(of: 2, topic: "campaign.timers", writer: [])
        #expect(record.topic == "campaign.timers" && record.partition == 2 && record.key == DecisionTimes.recordKey)
        let text = String(decoding: record.value ?? [], as: UTF8.self)
        #expect(text.hasPrefix(#"{"ranges":[{"first":7,"last":8,"decidedAt":"2027-01-15T08:00:00.123456789Z"}"#), "\(text)")
        #expect(DecisionTimes.decode(record.value ?? []) == times.ranges(of: 2))
        #expect(DecisionTimes.decode(Array(#"{"ranges":[]}"#.utf8)) == [])
        for text in [
            "", "[]", #"{"ranges":{}}"#, #"{"ranges":[{"first":1,"last":2}]}"#,
            #"{"ranges":[{"first":3,"last":2,"decidedAt":"2026-11-26T15:00:00Z"}]}"#,
            #"{"ranges":[{"first":"1","last":2,"decidedAt":"2026-11-26T15:00:00Z"}]}"#,
            #"{"ranges":[{"first":1,"last":2,"decidedAt":"yesterday"}]}"#,
        ] {
            #expect(DecisionTimes.decode(Array(text.utf8)) == nil, "\(text)")
        }
    }

    /// Found by review: a cancellation dated before a send's decision instant but read by the campaign table only
    /// after the send was judged made the send `push.delivered` once and `push.suppressed` when read again. A range
    /// now keeps how far the table had read the definitions topic, and a send read again is judged against that.
    @Test("ranges keep the horizon of the table they were judged with: judged alike they join, otherwise not")
    func rangesKeepTheirHorizon() {
        let times = DecisionTimes()
        let early = CampaignTable.Horizon([0: 4])
        let late = CampaignTable.Horizon([0: 5, 1: 2])
        _ = times.judge([0, 1], of: 0, now: start, horizon: early)
        _ = times.judge([2], of: 0, now: later(10), horizon: early)
        // Same instant (within 100 ms), another horizon: a range of its own.
        _ = times.judge([3], of: 0, now: later(20), horizon: late)
        #expect(
            times.ranges(of: 0) == [
                .init(first: 0, last: 2, decidedAt: start, horizon: early), .init(first: 3, last: 3, decidedAt: start, horizon: late),
            ]
        )
        let again = times.judgements(for: [1, 3, 4], of: 0, now: later(5_000))
        #expect(again.map(\.horizon) == [early, late, nil])
        #expect(again.map(\.wasJudged) == [true, true, false])
        #expect(again.map(\.decidedAt) == [start, start, later(5_000)])
        // Undecided records are not recorded: nothing is, until `record`.
        #expect(times.ranges(of: 0).count == 2)
        // Offsets a range came to hold while they were decided (another instance's late record) are not recorded
        // again, and are named: they are decided again as recorded.
        let recorded = times.record([(offset: 3, decidedAt: later(5_000), horizon: nil), (offset: 4, decidedAt: later(5_000), horizon: nil)], of: 0)
        #expect(recorded.changed && recorded.heldAlready == [3])
        #expect(times.ranges(of: 0).last == .init(first: 4, last: 4, decidedAt: later(5_000)))
        // Merged records keep them apart too, and the instants' record carries them.
        let merged = DecisionTimes()
        merged.merge([.init(first: 0, last: 1, decidedAt: start, horizon: early)], of: 0)
        merged.merge([.init(first: 2, last: 3, decidedAt: start, horizon: late)], of: 0)
        merged.merge([.init(first: 4, last: 5, decidedAt: start, horizon: late)], of: 0)
        #expect(merged.ranges(of: 0) == [.init(first: 0, last: 1, decidedAt: start, horizon: early), .init(first: 2, last: 5, decidedAt: start, horizon: late)])
        let record = times.record(of: 0, topic: "campaign.timers", writer: [])
        let text = String(decoding: record.value ?? [], as: UTF8.self)
        #expect(text.contains(#""definitionsRead":{"0":5,"1":2}"#), "\(text)")
        #expect(DecisionTimes.decode(record.value ?? []) == times.ranges(of: 0))
        // Records written before horizons were read back without one: judged against the whole table.
        #expect(DecisionTimes.decode(Array(#"{"ranges":[{"first":1,"last":2,"decidedAt":"2026-11-26T15:00:00Z"}]}"#.utf8))?.first?.horizon == nil)
        for text in [
            #"{"ranges":[{"first":1,"last":2,"decidedAt":"2026-11-26T15:00:00Z","definitionsRead":[4]}]}"#,
            #"{"ranges":[{"first":1,"last":2,"decidedAt":"2026-11-26T15:00:00Z","definitionsRead":{"x":4}}]}"#,
            #"{"ranges":[{"first":1,"last":2,"decidedAt":"2026-11-26T15:00:00Z","definitionsRead":{"0":-1}}]}"#,
        ] {
            #expect(DecisionTimes.decode(Array(text.utf8)) == nil, "\(text)")
        }
    }

    /// Found by review: the timers topic is folded by every instance as it starts, and a record no instance writes
    /// (edited by hand, or another program's) trapped working out the offset after its last, or the distance to an
    /// instant centuries away: every start crashed the same way. Such a record is now not one (logged and skipped), and
    /// any instant a record can hold is compared without overflow.
    @Test("records at offsets no partition has are not records, and instants centuries away are judged without a trap")
    func extremeRecords() {
        for text in [
            #"{"ranges":[{"first":1,"last":9223372036854775807,"decidedAt":"2026-11-26T15:00:00Z"}]}"#,
            #"{"ranges":[{"first":-5,"last":2,"decidedAt":"2026-11-26T15:00:00Z"}]}"#,
        ] {
            #expect(DecisionTimes.decode(Array(text.utf8)) == nil, "\(text)")
        }
        let times = DecisionTimes()
        let ancient = try? Timestamp(rfc3339: "0001-01-01T00:00:00Z")
        let ranges = DecisionTimes.decode(Array(#"{"ranges":[{"first":0,"last":4,"decidedAt":"0001-01-01T00:00:00Z"}]}"#.utf8))
        #expect(ranges?.first?.decidedAt == ancient)
        times.merge(ranges ?? [], of: 0)
        // The next batch is not within 100 ms of an instant two thousand years before: a range of its own.
        let judged = times.judge([4, 5], of: 0, now: start)
        #expect(judged.instants == [ancient, start].compactMap { $0 })
    }

    /// The fold of a partition's records was quadratic: each record extending its writer's range added a range.
    @Test("records that extend their writer's range batch after batch fold into one range, whatever their number")
    func extendingRecordsFoldIntoOneRange() {
        let times = DecisionTimes()
        for last in stride(from: Int64(0), to: 10_000, by: 10) {
            times.merge([.init(first: 0, last: last + 9, decidedAt: start)], of: 0)
        }
        #expect(times.ranges(of: 0) == [.init(first: 0, last: 9_999, decidedAt: start)])
        #expect(times.logged(of: 0) == times.ranges(of: 0))
        // A gap filled at the instant of both sides joins them; at another instant it stays apart.
        times.merge([.init(first: 10_010, last: 10_019, decidedAt: start)], of: 0)
        times.merge([.init(first: 10_000, last: 10_009, decidedAt: start)], of: 0)
        #expect(times.ranges(of: 0) == [.init(first: 0, last: 10_019, decidedAt: start)])
        times.merge([.init(first: 10_030, last: 10_039, decidedAt: start), .init(first: 10_020, last: 10_029, decidedAt: later(1))], of: 0)
        #expect(times.ranges(of: 0).count == 3)
        // The group's committed offset cuts a range it falls in.
        times.committed(5_000, of: 0)
        #expect(times.ranges(of: 0).first == .init(first: 5_000, last: 10_019, decidedAt: start))
        #expect(times.logged(of: 0) == times.ranges(of: 0))
    }

    @Test("one record of a partition is in flight: the changes made meanwhile go in one newer record when it lands")
    func oneRecordInFlight() async {
        let times = DecisionTimes()
        let sentAt = ContinuousClock.now
        let first = AcknowledgementCountdown(count: 1)
        #expect(times.recordNeeded(for: 1, acknowledging: first, now: sentAt), "none in flight: sent now")
        let waiting = (0..<3).map { _ in AcknowledgementCountdown(count: 1) }
        for countdown in waiting {
            #expect(!times.recordNeeded(for: 1, acknowledging: countdown), "one in flight: sent when it lands")
        }
        #expect(!times.recordNeeded(for: 1, acknowledging: nil))
        #expect(times.recordNeeded(for: 0, acknowledging: nil), "partitions are apart")
        #expect(!times.isLagging(1, by: .seconds(5), now: sentAt + .seconds(5)))
        #expect(times.isLagging(1, by: .seconds(5), now: sentAt + .seconds(6)))

        let landedAt = sentAt + .seconds(60)
        #expect(times.recordLanded(1, now: landedAt), "changed meanwhile: one newer record, now")
        #expect(await first.wait(atMost: .zero))
        for countdown in waiting { #expect(!(await countdown.wait(atMost: .zero)), "theirs is the newer record") }
        #expect(!times.isLagging(1, by: .seconds(5), now: landedAt + .seconds(5)), "the newer record's time counts")
        #expect(!times.recordLanded(1), "nothing changed since: none more")
        for countdown in waiting { #expect(await countdown.wait(atMost: .zero)) }
        #expect(!times.isLagging(1, by: .seconds(5), now: landedAt + .seconds(60)))
        #expect(times.recordNeeded(for: 1, acknowledging: nil), "none in flight again")
    }

    @Test("a countdown returns once every acknowledgement came, or when the limit passes")
    func countdown() async {
        #expect(await AcknowledgementCountdown(count: 0).wait(atMost: .seconds(10)))
        let countdown = AcknowledgementCountdown(count: 2)
        let acknowledging = Task {
            try? await Task.sleep(for: .milliseconds(50))
            countdown.acknowledge()
            countdown.acknowledge()
        }
        let started = ContinuousClock.now
        #expect(await countdown.wait(atMost: .seconds(30)))
        #expect(ContinuousClock.now - started < .seconds(20))
        await acknowledging.value
        let short = AcknowledgementCountdown(count: 1)
        #expect(!(await short.wait(atMost: .milliseconds(100))))
    }

    /// The race this guards against: a record sent for a batch that was then never emitted (its partition revoked
    /// meanwhile) lands after the next owner's record for the same offsets; every other instance takes the next
    /// owner's instants (the first on the topic), so this one must too when the partition comes back to it.
    @Test("on a new reading, sends are judged at the instants in the topic's order, this instance's own late record losing")
    func newReadingAdoptsTheTopicsOrder() {
        let times = DecisionTimes()
        _ = times.judge([10, 11, 12], of: 0, now: start)  // its record on its way when the partition is revoked
        times.merge([.init(first: 10, last: 14, decidedAt: later(3_000))], of: 0)  // the next owner's, first on the topic
        times.merge([.init(first: 10, last: 12, decidedAt: start)], of: 0, writtenHere: true)  // this one's, landing after
        #expect(times.ranges(of: 0) == [.init(first: 10, last: 12, decidedAt: start), .init(first: 13, last: 14, decidedAt: later(3_000))])
        #expect(times.logged(of: 0) == [.init(first: 10, last: 14, decidedAt: later(3_000))], "the topic's order: the next owner's first")
        times.adoptLogged([0, 5])
        #expect(times.judge([10, 13, 15], of: 0, now: later(9_000)).instants == [later(3_000), later(3_000), later(9_000)])
        #expect(times.ranges(of: 5).isEmpty && times.logged(of: 5).isEmpty, "a partition never read stays empty")
    }

    @Test("this instance's own records, read back in order, leave its instants as they were when it reads a partition anew")
    func ownRecordsReadBackChangeNothing() {
        let times = DecisionTimes()
        _ = times.judge([0, 1], of: 2, now: start)
        let first = times.ranges(of: 2)
        times.merge(first, of: 2, writtenHere: true)
        _ = times.judge([2], of: 2, now: later(2_000))
        times.merge(times.ranges(of: 2), of: 2, writtenHere: true)
        times.merge([.init(first: 2, last: 3, decidedAt: later(4_000))], of: 2)  // a late record of an earlier owner
        let judged = times.ranges(of: 2)
        #expect(judged.map(\.decidedAt) == [start, later(2_000), later(4_000)])
        times.adoptLogged([2])
        #expect(times.ranges(of: 2) == judged)
        times.committed(2, of: 2)
        #expect(times.logged(of: 2) == times.ranges(of: 2), "the committed offset trims both")
        #expect(times.ranges(of: 2).first?.first == 2)
    }

    @Test("waiting for this instance's records of some partitions returns once they are acknowledged, or at the limit")
    func waitingForOwnRecords() async {
        let times = DecisionTimes()
        #expect(await times.waitForAcknowledgements(of: [0], atMost: .milliseconds(1)).isEmpty)
        _ = times.recordNeeded(for: 0, acknowledging: nil)
        _ = times.recordNeeded(for: 1, acknowledging: nil)
        #expect(await times.waitForAcknowledgements(of: [2], atMost: .milliseconds(1)).isEmpty, "other partitions are not waited for")
        #expect(await times.waitForAcknowledgements(of: [0, 2], atMost: .milliseconds(50)) == [0])
        let acknowledging = Task {
            try? await Task.sleep(for: .milliseconds(50))
            _ = times.recordLanded(0)
        }
        #expect(await times.waitForAcknowledgements(of: [0], atMost: .seconds(30)).isEmpty)
        await acknowledging.value
        #expect(await times.waitForAcknowledgements(of: [0, 1], atMost: .milliseconds(20)) == [1])
    }

    /// The other order of that race: the revoked instance's record lands after the next owner read the topic to its
    /// end. The revocation fences the partition: no change is recorded any more, and the records in flight, with the
    /// newer one holding the changes made before, are waited for.
    @Test("a partition being revoked is fenced: its records in flight are waited for, nothing newer is recorded, and a new reading opens it again")
    func revokedPartitionIsFenced() async {
        let times = DecisionTimes()
        let inFlight = AcknowledgementCountdown(count: 1)
        #expect(times.recordNeeded(for: 0, acknowledging: inFlight))
        let waitingForNext = AcknowledgementCountdown(count: 1)
        #expect(!times.recordNeeded(for: 0, acknowledging: waitingForNext))

        // Partition 0's record lands during the fence (from another task, as the producer's delivery callback does),
        // then the newer one holding the change made before the fence; the fence returns once both landed.
        let landing = Task {
            while !times.isClosed(0) { try? await Task.sleep(for: .milliseconds(5)) }
            let sendsNewer = times.recordLanded(0)
            try? await Task.sleep(for: .milliseconds(50))
            return (sendsNewer, times.recordLanded(0))
        }
        let started = ContinuousClock.now
        let unlanded = await onThreadOfItsOwn { times.close([0, 2], waitingAtMost: .seconds(60)) }
        #expect(unlanded.isEmpty)
        #expect(ContinuousClock.now - started < .seconds(30), "returned once they landed")
        let (sendsNewer, sendsMore) = await landing.value
        #expect(sendsNewer, "the change made before the fence is still sent")
        #expect(!sendsMore, "nothing after it")
        #expect(await inFlight.wait(atMost: .zero))
        #expect(await waitingForNext.wait(atMost: .zero), "acknowledged by the newer record")

        // Partition 1's record never lands: the fence gives up at its limit and names it.
        _ = times.recordNeeded(for: 1, acknowledging: nil)
        let neverSent = AcknowledgementCountdown(count: 1)
        _ = times.recordNeeded(for: 1, acknowledging: neverSent)
        let limited = ContinuousClock.now
        #expect(await onThreadOfItsOwn { times.close([1], waitingAtMost: .milliseconds(200)) } == [1])
        #expect(ContinuousClock.now - limited >= .milliseconds(200), "waited up to the limit")
        #expect(await neverSent.wait(atMost: .zero), "after the limit, nothing waits for a record never to be sent")
        #expect(!times.recordLanded(1), "a record landing after the limit is followed by none")

        let refused = AcknowledgementCountdown(count: 1)
        #expect(!times.recordNeeded(for: 0, acknowledging: refused), "closed: nothing is sent")
        #expect(await refused.wait(atMost: .zero), "and nothing waits for it")
        #expect(times.isClosed(2))
        times.reopen([0, 2])
        #expect(times.recordNeeded(for: 0, acknowledging: nil), "a new reading sends again")
        #expect(!times.isClosed(2))
        #expect(times.isClosed(1), "a partition not read again stays closed")
    }
}

/// Runs `body`, which blocks, on a thread of its own (not the cooperative pool).
private func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

extension DecisionTimes {
    /// Judges `offsets` and records at once those not judged before, against `horizon`: what the pipeline does for a
    /// batch whose records are all decided against one table.
    fileprivate func judge(_ offsets: [Int64], of partition: Int32, now: Timestamp, horizon: CampaignTable.Horizon? = nil) -> (instants: [Timestamp], changed: Bool) {
        let judged = judgements(for: offsets, of: partition, now: now)
        let new = zip(offsets, judged).filter { !$0.1.wasJudged }.map { (offset: $0.0, decidedAt: $0.1.decidedAt, horizon: horizon) }
        let changed = record(new, of: partition).changed
        return (judged.map(\.decidedAt), changed)
    }
}
