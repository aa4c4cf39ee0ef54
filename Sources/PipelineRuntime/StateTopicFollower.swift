import Foundation
import KafkaClient
import Logging
import Synchronization

/// How far the pipeline's state has read one of its state topics (campaign definitions, timers), and a way to wait
/// until it has read all of it.
///
/// The state is folded by a consumer of its own, which follows the state topics a fetch or more behind the sends.
/// A send that names a campaign the table does not know (defined an instant before the send, or while the table
/// works through a burst of definitions) waits for ``catchUp(partitions:logger:)`` of the definitions topic instead
/// of being rejected for good; a new reading of a sends partition waits for that of its timers partition, where the
/// instants its records were judged at before are kept (``DecisionTimes``).
final class StateTopicFollower: Sendable {
    /// The state consumer that folds the topic.
    private let consumer: KafkaConsumer
    /// The state topic followed.
    let topic: String
    private let partitionCount: Int32
    /// The longest a catch-up waits, asking the broker included.
    let timeout: Duration
    /// Per partition, the offset after the last record folded, or after offsets found to hold nothing readable
    /// (transaction markers) at the end.
    private let positions = Mutex([Int32: Int64]())
    /// When the last catch-up of every partition that reached the end began: the state holds every record written
    /// before then.
    private let caughtUpAt = Mutex<Date?>(nil)

    /// How long a partition's position stays put short of its end before it is checked for unreadable offsets
    /// (transaction markers) at the end (``PartitionStalls``).
    static let stallCheck: Duration = .milliseconds(500)
    /// The clock difference allowed between a send's producer and this process when judging whether a catch-up
    /// came after the send was written (a producer clock behind would otherwise skip a catch-up the send needs).
    static let clockSkew: TimeInterval = 5

    init(consumer: KafkaConsumer, topic: String, partitionCount: Int32, timeout: Duration = .seconds(10)) {
        self.consumer = consumer
        self.topic = topic
        self.partitionCount = partitionCount
        self.timeout = timeout
    }

    /// Notes that the record at `offset` of `partition` has been folded into the state.
    func folded(partition: Int32, offset: Int64) {
        positions.withLock { $0[partition] = max($0[partition] ?? 0, offset + 1) }
    }

    /// Whether the state has read the topic to its end since a send written at `written` (its record's
    /// timestamp; `nil` when unknown): a definition written before the send is in it, and waiting cannot help.
    func hasCaughtUp(since written: Date?) -> Bool {
        guard let written, let caughtUpAt = caughtUpAt.withLock({ $0 }) else { return false }
        return caughtUpAt.timeIntervalSince(written) > Self.clockSkew
    }

    /// How a catch-up ended.
    enum CatchUp {
        /// The state has read every partition asked for to the end the broker had when the catch-up began.
        case reachedEnd
        /// ``timeout`` passed, or the broker did not answer (logged).
        case gaveUp
        /// The task was cancelled (the pipeline stops): nothing can be concluded.
        case cancelled
    }

    /// Waits until the state has folded `partitions` of the topic (every partition when `nil`) up to the end the
    /// broker has now, or until ``timeout`` passed (logged), or the task is cancelled.
    func catchUp(partitions: Set<Int32>? = nil, logger: Logger) async -> CatchUp {
        await catchUpEach(partitions: partitions, logger: logger).outcome
    }

    /// ``catchUp(partitions:logger:)``, and the partitions that were folded to their end: when the broker does not
    /// answer for one partition (no leader) or it is not folded in time, the others still are.
    func catchUpEach(partitions: Set<Int32>? = nil, logger: Logger) async -> (outcome: CatchUp, reached: Set<Int32>) {
        let started = Date()
        let deadline = ContinuousClock.now + timeout
        let asked = Set((0..<partitionCount).filter { partitions?.contains($0) ?? true })
        var (targets, unanswered) = await ends(of: asked, before: deadline, logger: logger)
        if Task.isCancelled { return (.cancelled, []) }
        // Those already folded to their end.
        var reached = asked.subtracting(targets.keys).subtracting(unanswered)
        var stalls = PartitionStalls(firstWait: Self.stallCheck, longestWait: .seconds(2))
        while !targets.isEmpty {
            let now = ContinuousClock.now
            if Task.isCancelled { return (.cancelled, []) }
            guard now < deadline else {
                let folded = positions.withLock { $0 }
                logger.warning(
                    "The pipeline's state did not catch up with a state topic in time",
                    metadata: [
                        "topic": "\(topic)",
                        "behind": "\(targets.map { "\($0.key):\(folded[$0.key] ?? $0.value.start)<\($0.value.end)" }.sorted().joined(separator: ","))",
                    ]
                )
                return (.gaveUp, reached)
            }
            let folded = positions.withLock { $0 }
            for (partition, target) in targets {
                let position = max(folded[partition] ?? target.start, target.start)
                let partitionID = KafkaTopicPartition(topic: topic, partition: partition)
                if position >= target.end {
                    targets[partition] = nil
                    reached.insert(partition)
                } else if stalls.isDue(partitionID, at: position, now: now) {
                    // Short of the end with nothing coming: the rest may be transaction markers or aborted records.
                    let left = min(deadline - now, .seconds(2))
                    let remainder = try? await consumer.remainder(from: position, before: target.end, in: partitionID, timeout: left)
                    if case .nothingReadable? = remainder {
                        positions.withLock { $0[partition] = max($0[partition] ?? 0, target.end) }
                        targets[partition] = nil
                        reached.insert(partition)
                    } else {
                        stalls.checkLater(partitionID, now: .now)
                    }
                }
            }
            if !targets.isEmpty {
                do { try await Task.sleep(for: .milliseconds(5)) } catch { return (.cancelled, []) }
            }
        }
        guard unanswered.isEmpty else { return (.gaveUp, reached) }
        if partitions == nil { caughtUpAt.withLock { $0 = max($0 ?? started, started) } }
        return (.reachedEnd, reached)
    }

    /// A partition still to be folded up to `end`, from `start` (its low watermark, when nothing was folded yet).
    private struct Target {
        var start: Int64
        var end: Int64
    }

    /// The partitions of `partitions` whose end (asked of the broker, all at once) lies past what the state has
    /// folded, and those whose end the broker did not tell in time (logged).
    private func ends(of partitions: Set<Int32>, before deadline: ContinuousClock.Instant, logger: Logger) async -> (targets: [Int32: Target], unanswered: Set<Int32>) {
        let folded = positions.withLock { $0 }
        let timeout = deadline - ContinuousClock.now
        let consumer = self.consumer
        let topic = self.topic
        return await withTaskGroup(of: (Int32, Result<KafkaWatermarks, KafkaError>).self) { group in
            for partition in partitions {
                group.addTask {
                    // The watermarks bound to a name before the tuple is made: Swift 6.3's optimizer miscompiles a tuple
                    // returned from a task's `do` block whose first part is known before a suspension and its second
                    // after it (swiftlang/swift#91911, reverted in #92155): the partition came back as the bytes of
                    // the topic's name, so no partition ever counted as caught up, and every catch-up waited out its
                    // 10 s. `AsyncTupleMiscompileTests` keeps the shape out of the code.
                    do throws(KafkaError) {
                        let marks = try await consumer.watermarks(topic: topic, partition: partition, timeout: timeout)
                        return (partition, .success(marks))
                    } catch {
                        return (partition, .failure(error))
                    }
                }
            }
            var targets: [Int32: Target] = [:]
            var unanswered: Set<Int32> = []
            for await (partition, result) in group {
                switch result {
                case .success(let marks):
                    // Records before the low watermark are gone: nothing to wait for there.
                    if max(folded[partition] ?? marks.low, marks.low) < marks.high {
                        targets[partition] = Target(start: marks.low, end: marks.high)
                    }
                case .failure(let error):
                    unanswered.insert(partition)
                    // Stopping: the look-up was abandoned, nothing to report.
                    if error.code == .cancelled { continue }
                    logger.warning(
                        "Could not read a state topic's end offsets",
                        metadata: ["topic": "\(topic)", "partition": "\(partition)", "error": "\(error)"]
                    )
                }
            }
            return (targets, unanswered)
        }
    }
}
