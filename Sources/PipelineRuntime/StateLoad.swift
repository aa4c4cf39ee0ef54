import KafkaClient
import Logging
import Synchronization

/// How far the start-up fold of the state topics has come: per partition, where it is and the end it must reach (the
/// end offset at start-up).
final class StateLoad: Sendable {
    /// Per partition not read to its end yet: the offset after the last record read (at first, the partition's
    /// start) and the end.
    private let partitions: Mutex<[KafkaTopicPartition: (position: Int64, end: Int64)]>

    /// - Parameter ranges: per partition, its offsets at start-up (low to high watermark).
    init(ranges: [KafkaTopicPartition: Range<Int64>]) {
        partitions = Mutex(ranges.filter { !$0.value.isEmpty }.mapValues { ($0.lowerBound, $0.upperBound) })
    }

    /// Whether every partition has been read to its end.
    var isDone: Bool { partitions.withLock { $0.isEmpty } }

    /// Notes a record read.
    func read(_ message: KafkaConsumerMessage) {
        partitions.withLock { partitions in
            guard let partition = partitions[message.topicPartition] else { return }
            partitions[message.topicPartition] = message.offset + 1 >= partition.end ? nil : (message.offset + 1, partition.end)
        }
    }

    /// Until every partition is read: a partition whose position stayed put for two seconds is asked what is left to
    /// read before its end, and counts as read when nothing readable is (a topic written by transactional producers
    /// ends in a transaction marker, which no consumer is given; waiting for it, the pipeline never started).
    func readThroughUnreadableEnds(using consumer: KafkaConsumer, logger: Logger) async throws {
        var stalls = PartitionStalls(firstWait: .seconds(2))
        while !isDone {
            try await Task.sleep(for: .milliseconds(250))
            let now = ContinuousClock.now
            let snapshot = partitions.withLock { $0 }
            for (partition, state) in snapshot.sorted(by: { $0.key.description < $1.key.description })
            where stalls.isDue(partition, at: state.position, now: now) {
                let remainder = try? await consumer.remainder(from: state.position, before: state.end, in: partition, timeout: .seconds(5))
                guard case .nothingReadable? = remainder else {
                    stalls.checkLater(partition, now: .now)
                    continue
                }
                let isReadThrough = partitions.withLock { partitions in
                    // Only if no record was read meanwhile.
                    guard partitions[partition]?.position == state.position else { return false }
                    partitions[partition] = nil
                    return true
                }
                if isReadThrough {
                    logger.info("State topic read through", metadata: ["partition": "\(partition)", "unreadableOffsets": "\(state.position)..<\(state.end)"])
                }
            }
        }
    }
}
