import KafkaClient
import Logging
import Synchronization

/// How far the start-up fold of the state topics has come: per partition, the end it must reach (the end offset at
/// start-up) and where it is.
final class StateLoad: Sendable {
    private struct Partition {
        var end: Int64
        var position: Int64?
        var since: ContinuousClock.Instant
    }

    private let partitions: Mutex<[KafkaTopicPartition: Partition]>

    init(ends: [KafkaTopicPartition: Int64]) {
        let now = ContinuousClock.now
        partitions = Mutex(ends.mapValues { Partition(end: $0, position: nil, since: now) })
    }

    /// Whether every partition has been read to its end.
    var isDone: Bool { partitions.withLock { $0.isEmpty } }

    /// Notes a record read.
    func read(_ message: KafkaConsumerMessage) {
        partitions.withLock { partitions in
            guard var partition = partitions[message.topicPartition] else { return }
            if message.offset + 1 >= partition.end {
                partitions[message.topicPartition] = nil
            } else {
                partition.position = message.offset + 1
                partition.since = .now
                partitions[message.topicPartition] = partition
            }
        }
    }

    /// Until every partition is read: a partition whose position stayed put for two seconds is asked what is left to
    /// read before its end, and counts as read when nothing readable is (a topic written by transactional producers
    /// ends in a transaction marker, which no consumer is given; waiting for it, the pipeline never started).
    func readThroughUnreadableEnds(using consumer: KafkaConsumer, logger: Logger) async throws {
        while !isDone {
            try await Task.sleep(for: .milliseconds(250))
            let now = ContinuousClock.now
            let stalled = partitions.withLock { partitions in
                partitions.filter { now - $0.value.since >= .seconds(2) }
            }
            for (partition, state) in stalled.sorted(by: { $0.key.description < $1.key.description }) {
                let from: Int64
                if let position = state.position {
                    from = position
                } else if let marks = try? await consumer.watermarks(topic: partition.topic, partition: partition.partition) {
                    // Not read from yet: from the partition's start.
                    from = marks.low
                } else {
                    continue
                }
                let remainder = try? await consumer.remainder(from: from, before: state.end, in: partition, timeout: .seconds(5))
                partitions.withLock { partitions in
                    guard var current = partitions[partition], current.position == state.position else { return }
                    if case .nothingReadable? = remainder {
                        partitions[partition] = nil
                        logger.info(
                            "State topic read through",
                            metadata: ["partition": "\(partition)", "unreadableOffsets": "\(from)..<\(state.end)"]
                        )
                    } else {
                        current.since = .now
                        partitions[partition] = current
                    }
                }
            }
        }
    }
}
