import Foundation
import KafkaClient
import PipelineCore
import Synchronization

/// The instants the streaming pipeline judged its sends at (expiry, cancellations, timers), per partition of the
/// sends topic, so that a send read again after a crash or a rebalance is judged as it was at its first reading.
///
/// Before a batch's outputs are written, the offsets it judged, the instant it judged them at and how far the campaign
/// table it judged them with had read the definitions topic (its horizon) are written to the send's partition of the
/// timers topic, under the key ``recordKey``: a record holds every range of the partition
/// not yet known to be committed, the ranges its writer took from earlier owners included, so the latest record
/// (the one compaction keeps) has them all. Every instance folds the timers topic, and the owner of a partition
/// reads it to its end before judging records of a new reading of the partition, so a record read again finds the
/// instant of its first judging. Where records disagree about an offset, the first one read wins: it is the instant
/// the offset's outputs were written for (``merge(_:of:writtenHere:)``).
///
/// An instance's own records are folded too, into the partition's logged ranges: the instants in the order
/// the topic holds them, as every other instance reads them. When the instance starts a new reading of a partition, it
/// waits for its own records of the partition to be acknowledged, reads the topic to its end, and judges from those
/// (``adoptLogged(_:)``): a record of its earlier reading that landed after the next owner's (sent before a revocation,
/// for a batch then never emitted) does not make it judge at an instant nobody else uses. And when a partition is
/// revoked, the instance records nothing more for it and waits for its records in flight
/// (``close(_:waitingAtMost:)``), before the group's rebalance lets the next owner read the topic.
///
/// Instants are reused within ``granularityNanoseconds`` of each other, so that consecutive batches judged against
/// the same campaign table (no definitions record read between them) extend one range instead of adding one each: a
/// record holds a few ranges for the seconds between a judging and its commit, one more for each change of instant
/// or of the table's horizon.
final class DecisionTimes: Sendable {
    /// Offsets `first...last` of a partition, judged at `decidedAt` against the campaign table as it had read the
    /// definitions topic up to `horizon` (`nil` in records written before horizons were: the whole table).
    struct Range: Sendable, Equatable {
        var first: Int64
        var last: Int64
        var decidedAt: Timestamp
        var horizon: CampaignTable.Horizon? = nil

        /// Whether an offset judged at `instant` against `horizon` can join this range.
        func isJudged(like instant: Timestamp, _ horizon: CampaignTable.Horizon?) -> Bool {
            decidedAt == instant && self.horizon == horizon
        }
    }

    /// How a record of a partition is judged.
    struct Judgement: Sendable, Equatable {
        /// The instant expiry, cancellations and timers are judged at.
        var decidedAt: Timestamp
        /// How far the campaign table had read the definitions topic when the record was first judged (``Range``);
        /// `nil` for a record not judged before (it is judged with the table as it is), or judged against the whole
        /// table.
        var horizon: CampaignTable.Horizon?
        /// Whether the record was judged before (a range holds it): it is judged as then.
        var wasJudged: Bool
    }

    /// The key of the decision times records on the timers topic (never a message id, which is a UUID).
    static let recordKey = Array("~decision-times".utf8)

    /// How close to the partition's last instant a new batch is judged at that same instant (100 ms).
    static let granularityNanoseconds: Int64 = 100_000_000

    private struct Partition {
        /// The instants sends are judged at here: by offset, not overlapping.
        var ranges: [Range] = []
        /// The ranges of the records on the topic, this instance's own included, folded in the order the topic
        /// holds them (by offset, not overlapping).
        var logged: [Range] = []
        /// The offset the group committed for the partition, last seen: ranges before it are no longer needed.
        var committed: Int64 = 0
    }

    private let state = Mutex([Int32: Partition]())
    /// A partition's record in flight.
    private struct Flight {
        /// When it was sent.
        var sentAt: ContinuousClock.Instant
        /// The countdowns it acknowledges when it lands.
        var acknowledging: [AcknowledgementCountdown]
        /// Whether the ranges changed since it was made: a newer record is sent when it lands.
        var isStale = false
        /// The countdowns that newer record acknowledges.
        var waitingForNext: [AcknowledgementCountdown] = []
    }

    /// The records in flight, and the partitions no record is sent for.
    private struct Flights {
        /// Per partition, the record in flight (none when absent).
        var byPartition: [Int32: Flight] = [:]
        /// Partitions being revoked or revoked (``close(_:waitingAtMost:)``), until their next reading here
        /// (``reopen(_:)``): no change of theirs is recorded.
        var closed: Set<Int32> = []

        /// Those of `partitions` whose record is in flight.
        func pending(among partitions: Set<Int32>) -> Set<Int32> {
            partitions.filter { byPartition[$0] != nil }
        }
    }

    private let flights = Mutex(Flights())

    /// Ranges of `partition` (for tests and for the record).
    func ranges(of partition: Int32) -> [Range] {
        state.withLock { $0[partition]?.ranges ?? [] }
    }

    /// Logged ranges of `partition`: those of the records read, in the topic's order (for tests).
    func logged(of partition: Int32) -> [Range] {
        state.withLock { $0[partition]?.logged ?? [] }
    }

    /// How each record at `offsets` (increasing) of `partition` is judged: as before, when a range holds it;
    /// otherwise at `now`, or at the partition's last instant when that is within ``granularityNanoseconds`` of `now`
    /// and the offset comes after its range. Nothing is recorded: once the records are decided, the judgements of
    /// those not judged before are, with the horizon they were decided against (``record(_:of:)``).
    func judgements(for offsets: [Int64], of partition: Int32, now: Timestamp) -> [Judgement] {
        state.withLock { state in
            let ranges = state[partition]?.ranges ?? []
            let last = ranges.last
            let instant = last.flatMap { Self.isWithinGranularity($0.decidedAt, of: now) ? $0.decidedAt : nil } ?? now
            return offsets.map { offset in
                if let held = Self.index(holding: offset, in: ranges) {
                    return Judgement(decidedAt: ranges[held].decidedAt, horizon: ranges[held].horizon, wasJudged: true)
                }
                return Judgement(decidedAt: offset > last?.last ?? -1 ? instant : now, horizon: nil, wasJudged: false)
            }
        }
    }

    /// Adds to the ranges of `partition` each of `decided` (offsets increasing) that no range holds: its offset,
    /// judged at an instant against the campaign table as it had read the definitions topic up to a horizon. An
    /// offset after the last range, judged like it, extends it.
    ///
    /// - Returns: whether the ranges changed (a record must then be written before the outputs of the offsets are),
    ///   and the offsets of `decided` a range held already: a record of another instance read while they were decided
    ///   (its late record of an earlier reading), whose judgement is the one on the topic, to decide them with again.
    func record(
        _ decided: [(offset: Int64, decidedAt: Timestamp, horizon: CampaignTable.Horizon?)],
        of partition: Int32
    ) -> (changed: Bool, heldAlready: [Int64]) {
        state.withLock { state in
            var entry = state[partition] ?? Partition()
            var changed = false
            var heldAlready: [Int64] = []
            for judged in decided {
                if Self.index(holding: judged.offset, in: entry.ranges) != nil {
                    heldAlready.append(judged.offset)
                    continue
                }
                changed = true
                if let last = entry.ranges.last, judged.offset > last.last, last.isJudged(like: judged.decidedAt, judged.horizon) {
                    entry.ranges[entry.ranges.count - 1].last = judged.offset
                } else {
                    let range = Range(first: judged.offset, last: judged.offset, decidedAt: judged.decidedAt, horizon: judged.horizon)
                    let position = entry.ranges.firstIndex { $0.first > judged.offset } ?? entry.ranges.count
                    entry.ranges.insert(range, at: position)
                }
            }
            state[partition] = entry
            return (changed, heldAlready)
        }
    }

    /// Folds the ranges of a record read from the topic, where they hold offsets no range holds yet: the instant
    /// an offset was first recorded at is the one its outputs were written for. (A record extends its writer's last
    /// range as later batches are judged at the same instant, so a range read again can be partly known already.)
    /// A record of another instance (or of an earlier run of this one) is added to the instants judged here too; one
    /// written here (`writtenHere`) only to the logged ones, its ranges being judged here already.
    func merge(_ ranges: [Range], of partition: Int32, writtenHere: Bool = false) {
        state.withLock { state in
            var entry = state[partition] ?? Partition()
            for range in ranges where range.last >= entry.committed {
                Self.add(range, to: &entry.logged)
                if !writtenHere { Self.add(range, to: &entry.ranges) }
            }
            state[partition] = entry
        }
    }

    /// Judges the sends of `partitions` at the instants of the records on the topic from now on, dropping those
    /// judged here that no record read holds (the start of a new reading of them, once this instance's own records
    /// are acknowledged and the topic is read to its end).
    func adoptLogged(_ partitions: some Sequence<Int32>) {
        state.withLock { state in
            for partition in partitions {
                guard var entry = state[partition] else { continue }
                entry.ranges = entry.logged
                state[partition] = entry
            }
        }
    }

    /// Adds the parts of `range` that `ranges` does not hold to it. A part that continues a range at the same
    /// instant extends it (a writer's records extend its last range batch after batch: a range per record would make
    /// the fold of a partition's records quadratic).
    private static func add(_ range: Range, to ranges: inout [Range]) {
        for piece in uncovered(range, by: ranges) {
            var position = ranges.firstIndex { $0.first > piece.first } ?? ranges.count
            if position > 0, ranges[position - 1].last + 1 == piece.first, ranges[position - 1].isJudged(like: piece.decidedAt, piece.horizon) {
                position -= 1
                ranges[position].last = piece.last
            } else {
                ranges.insert(piece, at: position)
            }
            let next = position + 1
            if next < ranges.count, ranges[position].last + 1 == ranges[next].first, ranges[next].isJudged(like: ranges[position].decidedAt, ranges[position].horizon) {
                ranges[position].last = ranges[next].last
                ranges.remove(at: next)
            }
        }
    }

    /// The parts of `range` that none of `ranges` (by offset, not overlapping) holds.
    static func uncovered(_ range: Range, by ranges: [Range]) -> [Range] {
        var pieces: [Range] = []
        var next = range.first
        for held in ranges where held.last >= range.first && held.first <= range.last {
            if held.first > next { pieces.append(Range(first: next, last: held.first - 1, decidedAt: range.decidedAt, horizon: range.horizon)) }
            next = max(next, held.last + 1)
        }
        if next <= range.last { pieces.append(Range(first: next, last: range.last, decidedAt: range.decidedAt, horizon: range.horizon)) }
        return pieces
    }

    /// Notes the offset the group committed for `partition`: the ranges are cut to the offsets from it on.
    func committed(_ offset: Int64, of partition: Int32) {
        state.withLock { state in
            var entry = state[partition] ?? Partition()
            entry.committed = max(entry.committed, offset)
            Self.cut(&entry.ranges, before: entry.committed)
            Self.cut(&entry.logged, before: entry.committed)
            state[partition] = entry
        }
    }

    /// Drops the offsets of `ranges` before `offset`.
    private static func cut(_ ranges: inout [Range], before offset: Int64) {
        ranges.removeAll { $0.last < offset }
        if let first = ranges.first, first.first < offset { ranges[0].first = offset }
    }

    /// Drops the ranges the group committed past, for every partition of `topic` (the sends topic) ranges are kept
    /// of or `consumer` reads: those of partitions other instances own, taken from their records, included, or they
    /// would pile up (a range per partition every ``granularityNanoseconds`` while it is read) until the instance
    /// came to own them. Gives up quietly when the cluster does not answer (tried again on the next call).
    /// `also` adds partitions to ask for (all of them before the start-up fold, when none is held or read yet).
    func trim(committedOf topic: String, askingThrough consumer: KafkaConsumer, also: some Sequence<Int32> = []) async {
        let read = consumer.assignment.filter { $0.topic == topic }.map(\.partition)
        let kept = state.withLock { state in
            state.compactMap { $0.value.ranges.isEmpty && $0.value.logged.isEmpty ? nil : $0.key }
        }
        let partitions = Set(read).union(kept).union(also).sorted().map { KafkaTopicPartition(topic: topic, partition: $0) }
        guard !partitions.isEmpty, let committed = try? await consumer.committed(partitions) else { return }
        for position in committed where position.offset >= 0 {
            self.committed(position.offset, of: position.partition)
        }
    }

    /// Notes that the ranges of `partition` changed and must be on the topic before the outputs judged with them
    /// are written, and `countdown` (if any) is to be acknowledged once a record holding them landed. At most one
    /// record of a partition is in flight: each holds every range, so the changes made while one is in flight go in
    /// one newer record, sent when it lands (``recordLanded(_:now:)``), however long the partition has no leader.
    /// A closed partition (being revoked) gets no record: `countdown` is acknowledged at once (the outputs judged with
    /// the change are not written by this instance, whose reading of the partition is over).
    ///
    /// - Returns: whether a record is to be sent now (none was in flight; it now is).
    func recordNeeded(for partition: Int32, acknowledging countdown: AcknowledgementCountdown?, now: ContinuousClock.Instant = .now) -> Bool {
        let answer = flights.withLock { flights -> Bool? in
            if flights.closed.contains(partition) { return nil }
            if var flight = flights.byPartition[partition] {
                flight.isStale = true
                if let countdown { flight.waitingForNext.append(countdown) }
                flights.byPartition[partition] = flight
                return false
            }
            flights.byPartition[partition] = Flight(sentAt: now, acknowledging: countdown.map { [$0] } ?? [])
            return true
        }
        guard let answer else {
            countdown?.acknowledge()
            return false
        }
        return answer
    }

    /// Fences `partitions`, which are being revoked: no change of theirs is recorded from now on, and the calling
    /// thread waits, at most `limit`, until their records in flight, and the newer ones holding the changes made
    /// before, landed, so that the partitions' next owner finds them when it reads the topic to its end. What is
    /// still in flight at the limit may land after that (logged by the caller); no newer record follows it, and the
    /// countdowns waiting for one are acknowledged.
    ///
    /// Blocks the calling thread, checking every 5 ms: it runs on the consumer's poll thread, in the revocation
    /// (``KafkaConsumerConfiguration/willRevokePartitions``), never on a task.
    ///
    /// - Returns: the partitions of `partitions` whose record is still in flight (none when all landed).
    func close(_ partitions: Set<Int32>, waitingAtMost limit: Duration) -> Set<Int32> {
        flights.withLock { $0.closed.formUnion(partitions) }
        let deadline = ContinuousClock.now + limit
        var pending = flights.withLock { $0.pending(among: partitions) }
        while !pending.isEmpty, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
            pending = flights.withLock { $0.pending(among: partitions) }
        }
        // What is still in flight is followed by no newer record: nothing waits for one.
        let (stillPending, dropped) = flights.withLock { flights -> (Set<Int32>, [AcknowledgementCountdown]) in
            let stillPending = flights.pending(among: partitions)
            var dropped: [AcknowledgementCountdown] = []
            for partition in stillPending {
                guard var flight = flights.byPartition[partition] else { continue }
                dropped += flight.waitingForNext
                flight.waitingForNext = []
                flight.isStale = false
                flights.byPartition[partition] = flight
            }
            return (stillPending, dropped)
        }
        for countdown in dropped { countdown.acknowledge() }
        return stillPending
    }

    /// Lets records of `partitions` be sent again: a new reading of them starts here.
    func reopen(_ partitions: some Sequence<Int32>) {
        flights.withLock { $0.closed.subtract(partitions) }
    }

    /// Whether `partition` is closed (``close(_:waitingAtMost:)``; for tests).
    func isClosed(_ partition: Int32) -> Bool {
        flights.withLock { $0.closed.contains(partition) }
    }

    /// Notes that the record in flight of `partition` landed, and acknowledges the countdowns it held.
    ///
    /// - Returns: whether a newer record is to be sent now (the ranges changed while it was in flight; that one is
    ///   then in flight, for the countdowns that waited for it).
    func recordLanded(_ partition: Int32, now: ContinuousClock.Instant = .now) -> Bool {
        let (landed, sendsAgain) = flights.withLock { flights -> ([AcknowledgementCountdown], Bool) in
            guard let flight = flights.byPartition[partition] else { return ([], false) }
            if flight.isStale {
                flights.byPartition[partition] = Flight(sentAt: now, acknowledging: flight.waitingForNext)
                return (flight.acknowledging, true)
            }
            flights.byPartition[partition] = nil
            return (flight.acknowledging, false)
        }
        for countdown in landed { countdown.acknowledge() }
        return sendsAgain
    }

    /// Waits until no record of `partitions` is in flight, at most `limit` (checking every 10 ms: this runs only when
    /// a partition's reading starts).
    ///
    /// - Returns: the partitions of `partitions` whose record is still in flight (none when all landed).
    func waitForAcknowledgements(of partitions: Set<Int32>, atMost limit: Duration) async -> Set<Int32> {
        let deadline = ContinuousClock.now + limit
        while true {
            let pending = flights.withLock { $0.pending(among: partitions) }
            guard !pending.isEmpty, ContinuousClock.now < deadline, !Task.isCancelled else { return pending }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Whether the record of `partition` in flight was sent more than `limit` before `now`: the outputs of later
    /// changes do not wait for the records that follow it.
    func isLagging(_ partition: Int32, by limit: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        flights.withLock { flights in
            guard let flight = flights.byPartition[partition] else { return false }
            return now - flight.sentAt > limit
        }
    }

    /// The record of `partition`'s ranges on `topic` (the timers topic), with this pipeline's `writer` header.
    func record(of partition: Int32, topic: String, writer: [KafkaHeader]) -> KafkaProducerRecord {
        KafkaProducerRecord(topic: topic, partition: partition, key: Self.recordKey, value: Self.encode(ranges(of: partition)), headers: writer)
    }

    /// `{"ranges":[{"first":0,"last":41,"decidedAt":"2026-11-26T15:00:00.123456789Z","definitionsRead":{"0":17}},...]}`:
    /// `definitionsRead` is the range's horizon, by partition of the definitions topic.
    static func encode(_ ranges: [Range]) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 32 + 80 * ranges.count)
        writer.beginObject()
        writer.key("ranges")
        writer.beginArray()
        for range in ranges {
            writer.nextElement()
            writer.beginObject()
            writer.key("first")
            writer.write(.int(Int(range.first)))
            writer.key("last")
            writer.write(.int(Int(range.last)))
            writer.member("decidedAt", timestamp: range.decidedAt)
            if let horizon = range.horizon {
                writer.key("definitionsRead")
                writer.beginObject()
                for (partition, offset) in horizon.offsets.sorted(by: { $0.key < $1.key }) {
                    writer.key(String(partition))
                    writer.write(.int(Int(offset)))
                }
                writer.endObject()
            }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    /// Reads a decision times record back; `nil` when it is not one (a range with a field missing or wrong, ending
    /// before it starts, or at offsets no partition has: the offset after a range's last is worked out). A range
    /// without `definitionsRead` (written before horizons were) has none.
    static func decode(_ bytes: [UInt8]) -> [Range]? {
        guard let root = try? JSONValue(parsing: bytes).objectValue, let elements = root["ranges"]?.arrayValue else { return nil }
        var ranges: [Range] = []
        ranges.reserveCapacity(elements.count)
        for element in elements {
            guard let object = element.objectValue,
                case .int(let first)? = object["first"],
                case .int(let last)? = object["last"],
                first >= 0, first <= last, last < Int.max,
                let text = object["decidedAt"]?.stringValue,
                let decidedAt = try? Timestamp(rfc3339: text)
            else { return nil }
            var horizon: CampaignTable.Horizon?
            if let read = object["definitionsRead"] {
                guard let horizonObject = read.objectValue else { return nil }
                var offsets: [Int32: Int64] = [:]
                for (key, value) in horizonObject {
                    guard let partition = Int32(key), partition >= 0, case .int(let offset) = value, offset >= 0 else { return nil }
                    offsets[partition] = Int64(offset)
                }
                horizon = CampaignTable.Horizon(offsets)
            }
            ranges.append(Range(first: Int64(first), last: Int64(last), decidedAt: decidedAt, horizon: horizon))
        }
        return ranges
    }

    /// The index of the range that holds `offset`, if any (the ranges are few: a linear search from the end, where
    /// the offsets read now are).
    private static func index(holding offset: Int64, in ranges: [Range]) -> Int? {
        guard let last = ranges.last, offset <= last.last else { return nil }
        return ranges.lastIndex { $0.first <= offset && offset <= $0.last }
    }

    private static func isWithinGranularity(_ instant: Timestamp, of now: Timestamp) -> Bool {
        // Seconds first: an instant centuries away (a record's, any RFC 3339 time) would overflow in nanoseconds.
        let seconds = now.secondsSince1970 - instant.secondsSince1970
        guard seconds >= 0, seconds <= 1 else { return false }
        let difference = seconds * 1_000_000_000 + Int64(now.nanoseconds - instant.nanoseconds)
        return difference >= 0 && difference < granularityNanoseconds
    }
}

/// Counts acknowledgements down to zero, and lets a task wait for that, for at most a given time.
final class AcknowledgementCountdown: Sendable {
    private let remaining: Atomic<Int>
    /// Fired at the last acknowledgement.
    private let done = StopSignal()

    init(count: Int) {
        remaining = Atomic(count)
        if count <= 0 { done.fire() }
    }

    /// One more acknowledgement; waiters resume at the last.
    func acknowledge() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.fire() }
    }

    /// Waits until every acknowledgement came, or `limit` passed, or the task is cancelled; whether they all came.
    func wait(atMost limit: Duration) async -> Bool {
        if done.isFired { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.done.wait() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
        return done.isFired
    }
}
