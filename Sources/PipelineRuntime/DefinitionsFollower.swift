import KafkaClient
import Logging
import Synchronization

/// How far the campaign table has read the definitions topic, and a way to wait until it has read all of it.
///
/// The table is folded by a consumer of its own, which follows the definitions topic a fetch or more behind the
/// sends. A send that names a campaign the table does not know (defined an instant before the send, or while the
/// table works through a burst of definitions) waits for ``catchUp(logger:)`` instead of being rejected for good.
final class DefinitionsFollower: Sendable {
    /// The state consumer that folds the topic.
    private let consumer: KafkaConsumer
    /// The definitions topic.
    let topic: String
    private let partitionCount: Int32
    /// The longest a catch-up waits.
    private let timeout: Duration
    /// Per partition, the offset after the last record folded, or after offsets found to hold nothing readable
    /// (transaction markers) at the end.
    private let positions = Mutex([Int32: Int64]())

    /// How long a partition's position stays put short of its end before it is checked for unreadable offsets
    /// (transaction markers) at the end.
    static let stallCheck: Duration = .milliseconds(500)

    init(consumer: KafkaConsumer, topic: String, partitionCount: Int32, timeout: Duration = .seconds(5)) {
        self.consumer = consumer
        self.topic = topic
        self.partitionCount = partitionCount
        self.timeout = timeout
    }

    /// Notes that the record at `offset` of `partition` has been folded into the table.
    func folded(partition: Int32, offset: Int64) {
        positions.withLock { $0[partition] = max($0[partition] ?? 0, offset + 1) }
    }

    /// Waits until the table has folded every partition of the definitions topic up to the end the broker has now,
    /// or until ``timeout`` passed (logged).
    func catchUp(logger: Logger) async {
        struct Target {
            var end: Int64
            var position: Int64
            var since: ContinuousClock.Instant
        }
        var targets: [Int32: Target] = [:]
        let folded = positions.withLock { $0 }
        let start = ContinuousClock.now
        for partition in 0..<partitionCount {
            let marks: KafkaWatermarks
            do {
                marks = try await consumer.watermarks(topic: topic, partition: partition)
            } catch {
                logger.warning("Could not read the definitions topic's end offsets", metadata: ["topic": "\(topic)", "error": "\(error)"])
                return
            }
            // Records before the low watermark are gone: nothing to wait for there.
            let position = max(folded[partition] ?? marks.low, marks.low)
            if position < marks.high { targets[partition] = Target(end: marks.high, position: position, since: start) }
        }
        while !targets.isEmpty {
            let now = ContinuousClock.now
            guard now - start < timeout else {
                logger.warning(
                    "The campaign table did not catch up with the definitions topic in time",
                    metadata: [
                        "topic": "\(topic)",
                        "behind": "\(targets.map { "\($0.key):\($0.value.position)<\($0.value.end)" }.sorted().joined(separator: ","))",
                    ]
                )
                return
            }
            let folded = positions.withLock { $0 }
            for (partition, var target) in targets {
                let position = folded[partition] ?? target.position
                if position >= target.end {
                    targets[partition] = nil
                } else if position != target.position {
                    target.position = position
                    target.since = now
                    targets[partition] = target
                } else if now - target.since >= Self.stallCheck {
                    // Short of the end with nothing coming: the rest may be transaction markers or aborted records.
                    let partitionID = KafkaTopicPartition(topic: topic, partition: partition)
                    let remainder = try? await consumer.remainder(from: position, before: target.end, in: partitionID, timeout: .seconds(2))
                    if case .nothingReadable? = remainder {
                        positions.withLock { $0[partition] = max($0[partition] ?? 0, target.end) }
                        targets[partition] = nil
                    } else {
                        target.since = .now
                        targets[partition] = target
                    }
                }
            }
            if !targets.isEmpty { try? await Task.sleep(for: .milliseconds(5)) }
        }
    }
}
