import HeapModule
import KafkaClient
import PipelineCore
import Synchronization

/// The pending timer expiries: delivered timer notifications whose countdown has not ended yet.
///
/// Its durable form is the compacted timers topic (one record per message id, a tombstone once fired), folded
/// back at start-up, so pending expiries survive a restart. A timer lives in the partition of the send it came
/// from and fires only on the instance that owns that partition.
///
/// Timers are kept by message id and, for firing, in a min-heap by due time: scheduling costs O(log n) and a
/// tick that fires k timers O(k log n), however many are pending (a busy instance holds hundreds of thousands).
/// Due timers of partitions another instance owns are parked by partition, off the heap, until their
/// tombstone arrives or the partition is assigned here.
final class TimerBook: Sendable {
    struct PendingTimer: Sendable, Equatable {
        var identity: MessageIdentity
        var expiresAt: Timestamp
        var partition: Int32
    }

    /// A message id with its hash worked out once. The book's tables rehash every key each time they grow (to
    /// hundreds of thousands on a busy instance), and hashing the id's text over and over cost more than the rest
    /// of scheduling a timer.
    private struct TimerKey: Hashable {
        let messageId: String
        private let hash: Int

        init(_ messageId: String) {
            self.messageId = messageId
            hash = messageId.hashValue
        }

        static func == (lhs: TimerKey, rhs: TimerKey) -> Bool { lhs.hash == rhs.hash && lhs.messageId == rhs.messageId }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// A due time in the heap. Entries of timers replaced or removed since are left in place and skipped when
    /// they come up (their message id no longer maps to a timer with this due time).
    private struct DueEntry: Comparable {
        var expiresAt: Timestamp
        var key: TimerKey

        static func < (lhs: DueEntry, rhs: DueEntry) -> Bool { lhs.expiresAt < rhs.expiresAt }
        static func == (lhs: DueEntry, rhs: DueEntry) -> Bool { lhs.expiresAt == rhs.expiresAt && lhs.key == rhs.key }
    }

    /// A pending timer, kept out of the table's entries: the table grows by doubling into fresh memory, and with the
    /// timers in its entries (over 100 bytes each) most of the cost of scheduling in a growing book was the kernel
    /// zeroing those pages.
    private final class Boxed: Sendable {
        let timer: PendingTimer

        init(_ timer: PendingTimer) {
            self.timer = timer
        }
    }

    private struct State {
        var pending: [TimerKey: Boxed] = [:]
        var due = Heap<DueEntry>()
        /// Due timers of partitions not owned here when they came due, by partition.
        var parked: [Int32: [DueEntry]] = [:]
        /// How many entries ``parked`` holds (some may be stale: removed or rescheduled since).
        var parkedCount = 0
        /// Fired here and not yet seen tombstoned, with the due time of the timer that fired: a late read of that
        /// timer's record does not bring it back, while a newer timer of the message (its event delivered again) is
        /// scheduled. The tombstone this book wrote for it is recognised when it is read back.
        var fired: [TimerKey: Timestamp] = [:]
        /// Timers of this instance's deliveries whose record is sent and not acknowledged yet (``beginArming(_:)``),
        /// with whether a tombstone retiring them was read meanwhile: the partition's next owner read the record and
        /// fired the timer, and the acknowledgement must not bring it back here.
        var arming: [TimerKey: (expiresAt: Timestamp, isRetired: Bool)] = [:]
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.pending.count } }

    /// Entries parked for partitions owned elsewhere (for tests: they must not pile up).
    var parkedCount: Int { state.withLock { $0.parkedCount } }

    /// Timers whose record is being written (for tests: each is let go once acknowledged).
    var armingCount: Int { state.withLock { $0.arming.count } }

    /// Adds or replaces a timer (from a delivery, or folded from the topic). A timer that fired here is not brought
    /// back by its record read late; another timer of the same message (a delivery of the event read again) is
    /// scheduled.
    func schedule(_ timer: PendingTimer) {
        state.withLock { state in
            let key = TimerKey(timer.identity.messageId)
            guard state.fired[key] != timer.expiresAt else { return }
            let previous = state.pending.updateValue(Boxed(timer), forKey: key)?.timer
            if previous?.expiresAt != timer.expiresAt || previous?.partition != timer.partition {
                state.due.insert(DueEntry(expiresAt: timer.expiresAt, key: key))
            }
            // Replaced timers leave stale entries behind; rebuild when they outnumber the live ones.
            if state.due.count > 2 * state.pending.count + 1_024 {
                state.due = Heap(state.pending.map { DueEntry(expiresAt: $0.value.timer.expiresAt, key: $0.key) })
                state.parked = [:]
                state.parkedCount = 0
            }
        }
    }

    /// A delivered timer's record is being written (``TimerArming``): a tombstone read before it is acknowledged and
    /// that retires it keeps ``finishArming(_:)`` from scheduling it.
    func beginArming(_ timer: PendingTimer) {
        state.withLock { $0.arming[TimerKey(timer.identity.messageId)] = (timer.expiresAt, false) }
    }

    /// A delivered timer's record is acknowledged: the timer is scheduled, unless a tombstone retiring it was read
    /// since ``beginArming(_:)`` (found by review: a late acknowledgement, after the partition's next owner had fired
    /// the timer and this book had read the tombstone, kept the timer pending here, to fire again were the partition
    /// assigned here again).
    func finishArming(_ timer: PendingTimer) {
        let key = TimerKey(timer.identity.messageId)
        let isRetired = state.withLock { state in
            guard let arming = state.arming[key], arming.expiresAt == timer.expiresAt else { return false }
            state.arming[key] = nil
            return arming.isRetired
        }
        if !isRetired { schedule(timer) }
    }

    /// Applies a tombstone read from the topic. `retiring` is the due time of the timer the tombstone retires (its
    /// `expiresAt` header; `nil` for a tombstone without one, which retires whatever timer the message has).
    ///
    /// A message's event can be delivered again (read again after a crash or a rebalance) around the time its first
    /// timer fires, so the new timer's record can reach the topic before the first timer's tombstone. That tombstone
    /// retires only the timer it names (or an earlier one): a pending timer due later, a newer countdown, stays.
    ///
    /// - Parameters:
    ///   - writtenHere: the tombstone carries this pipeline's `writer` header. Which book wrote it is told by the
    ///     header, not by which timers fired here: a timer can fire on two instances while its partition moves, and
    ///     the other one's tombstone, read first, must not stand for this one's, which can land later.
    ///   - now: the time of reading; a newer timer already due then is not asked for again (see below).
    /// - Returns: the timer to write to the topic again: the message's newer pending timer, when the tombstone is one
    ///   this book wrote and it landed after that newer timer's record, which compaction would otherwise delete. `nil`
    ///   otherwise, and also when the newer timer is due at `now`: its owner fires it (or has, when this book read its
    ///   own tombstone late, a stall or a lagging read), and a record written again after that timer's own tombstone
    ///   would bring it back to fire a second time.
    @discardableResult
    func remove(messageId: String, retiring: Timestamp? = nil, writtenHere: Bool = false, at now: Timestamp = .now()) -> PendingTimer? {
        state.withLock { state in
            let key = TimerKey(messageId)
            if let arming = state.arming[key], retiring.map({ arming.expiresAt <= $0 }) ?? true {
                state.arming[key]?.isRetired = true
            }
            // The tombstone of the timer that fired here has come back: a late read of that timer's record is over.
            if retiring == nil || state.fired[key] == retiring { state.fired[key] = nil }
            guard let retiring, let pending = state.pending[key]?.timer, pending.expiresAt > retiring else {
                state.pending[key] = nil
                return nil
            }
            return writtenHere && pending.expiresAt > now ? pending : nil
        }
    }

    /// Takes the timers due at `now` in the given partitions, earliest first, marking them fired. Due timers of
    /// other partitions stay pending (they fire where their partition is owned, here again if it comes back).
    func takeDue(at now: Timestamp, in partitions: Set<Int32>) -> [PendingTimer] {
        state.withLock { state in
            for partition in partitions {
                if let parked = state.parked.removeValue(forKey: partition) {
                    state.parkedCount -= parked.count
                    state.due.insert(contentsOf: parked)
                }
            }
            var due: [PendingTimer] = []
            while let next = state.due.min, next.expiresAt <= now {
                state.due.removeMin()
                guard let timer = state.pending[next.key]?.timer, timer.expiresAt == next.expiresAt else { continue }
                guard partitions.contains(timer.partition) else {
                    state.parked[timer.partition, default: []].append(next)
                    state.parkedCount += 1
                    continue
                }
                state.pending[next.key] = nil
                state.fired[next.key] = timer.expiresAt
                due.append(timer)
            }
            // Timers parked here are tombstoned by their owner; drop those entries before they pile up.
            if state.parkedCount > state.pending.count + 1_024 {
                let pending = state.pending
                state.parked = state.parked.compactMapValues { entries in
                    let live = entries.filter { entry in
                        pending[entry.key].map { $0.timer.expiresAt == entry.expiresAt } ?? false
                    }
                    return live.isEmpty ? nil : live
                }
                state.parkedCount = state.parked.values.reduce(0) { $0 + $1.count }
            }
            return due
        }
    }

    /// The header of a timer's tombstone that names the due time of the timer it retires (RFC 3339), so that a
    /// newer timer of the same message, written before it, is not retired with it
    /// (``remove(messageId:retiring:writtenHere:at:)``).
    static let retiresHeader = "expiresAt"

    /// The record of a pending timer: keyed by its message id, in its partition, with the `writer` header of the
    /// pipeline that writes it (`writer`), which does not apply its own records again when it reads them back.
    static func record(of timer: PendingTimer, topic: String, writer: [KafkaHeader]) -> KafkaProducerRecord {
        KafkaProducerRecord(
            topic: topic,
            partition: timer.partition,
            key: Array(timer.identity.messageId.utf8),
            value: encode(timer),
            headers: writer
        )
    }

    /// The tombstone of a fired timer: keyed by its message id, in its partition, naming its due time, with the
    /// `writer` header of the pipeline that fired it (`writer`), which recognises it when it reads it back.
    static func tombstone(of timer: PendingTimer, topic: String, writer: [KafkaHeader] = []) -> KafkaProducerRecord {
        KafkaProducerRecord(
            topic: topic,
            partition: timer.partition,
            key: Array(timer.identity.messageId.utf8),
            value: nil,
            headers: [KafkaHeader(key: retiresHeader, string: timer.expiresAt.rfc3339)] + writer
        )
    }

    /// The due time a tombstone's headers say it retires; `nil` when it names none (or not readably).
    static func retiredDueTime(of headers: [KafkaHeader]) -> Timestamp? {
        guard let header = headers.last(where: { $0.key == retiresHeader }), let value = header.value else { return nil }
        return try? Timestamp(rfc3339: String(decoding: value, as: UTF8.self))
    }

    /// The record value stored on the timers topic.
    static func encode(_ timer: PendingTimer) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        timer.identity.write(to: &writer)
        writer.member(RecordKeys.expiresAt, timestamp: timer.expiresAt)
        writer.endObject()
        return writer.bytes
    }

    /// Reads a timer record back; `nil` when it is not one.
    static func decode(_ bytes: [UInt8], partition: Int32) -> PendingTimer? {
        // Read in place (every timer record written is read back by the state consumer): no tree is built.
        guard let document = try? JSONDocument(parsing: bytes),
            let messageId = document.string(forKey: "messageId"),
            let expiresText = document.string(forKey: "expiresAt"),
            let expiresAt = try? Timestamp(rfc3339: expiresText)
        else { return nil }
        let identity = MessageIdentity(
            messageId: messageId,
            eventId: document.string(forKey: "sourceEventId"),
            campaignId: document.string(forKey: "campaignId"),
            recipientId: document.string(forKey: "recipientId"),
            platform: document.string(forKey: "platform").flatMap(Platform.init(rawValue:)),
            template: document.string(forKey: "template")
        )
        return PendingTimer(identity: identity, expiresAt: expiresAt, partition: partition)
    }
}
