import KafkaClient
import Logging
import Synchronization

/// Records of the sends topic deleted before the pipeline read them.
///
/// librdkafka reads on from the first offset still stored when the position it fetches from is no longer there
/// (retention deleted it while the pipeline lagged or was stopped; a deletion of records), and says so only in its
/// log. Those records get no outcome: nothing can be said of them but where they were. So the pipeline notes where
/// its reading jumps over offsets, and where a partition's reading starts from a committed offset below the first
/// one stored, and checks them against the partition's low watermark (``OffsetGaps``): it logs the offsets deleted
/// and counts them (`campaign_pipeline_records_deleted_unread_total`); a replay also names them when it ends.
extension CampaignPipeline {
    /// How often a streaming pipeline checks the offsets its reading jumped over.
    static let offsetGapsCheckInterval: Duration = .seconds(5)

    /// Notes that the reading of `partition` jumped from `expected` (the offset after the partition's last record
    /// read in the same reading, or where a reading starts) to `end` (the next record's offset, a replay's range end
    /// if before, or the first offset still stored), to be checked for records deleted before they were read. Called
    /// for every record: it takes the lock only when the reading jumped.
    func noteJump(from expected: Int64?, to end: Int64, in partition: KafkaTopicPartition) {
        guard let expected, end > expected else { return }
        offsetGaps.withLock { $0.note(from: expected, to: end, in: partition) }
    }

    /// Checks the offsets the reading jumped over (``OffsetGaps``) against their partitions' low watermarks, and says
    /// which were deleted before they were read. A partition whose watermarks cannot be had now is checked again
    /// with the next call. `timeout` bounds each partition's look-up.
    func settleOffsetGaps(consumer: KafkaConsumer, timeout: Duration = .seconds(5)) async {
        let partitions = offsetGaps.withLock { $0.unchecked.keys.sorted { $0.partition < $1.partition } }
        guard !partitions.isEmpty else { return }
        let lows = await lowWatermarks(of: partitions, consumer: consumer, timeout: timeout)
        for partition in partitions {
            guard let low = lows[partition] else { continue }
            let deleted = offsetGaps.withLock { $0.settle(partition, lowWatermark: low) }
            guard !deleted.isEmpty else { continue }
            let count = deleted.reduce(0) { $0 + $1.count }
            statistics.recordDeletedUnread(count)
            logger.warning(
                replay == nil
                    ? "Records were deleted before the pipeline read them (retention, while it lagged or was stopped, or a deletion of records): they get no outcome"
                    : "Records of the replay's range were deleted before it read them (retention, or a deletion of records): they are not replayed",
                metadata: [
                    "partition": "\(partition)",
                    "offsets": "\(deleted.map { "\($0.lowerBound)..<\($0.upperBound)" }.joined(separator: ","))",
                    "records": "\(count)",
                    "firstOffsetStored": "\(low)",
                ]
            )
        }
    }

    /// The first offset still stored of each of `partitions`, asked of all at once (one after the other, a replay's
    /// end waited for each in turn). A partition whose look-up fails within `timeout` is left out, and logged.
    func lowWatermarks(
        of partitions: [KafkaTopicPartition],
        consumer: KafkaConsumer,
        timeout: Duration
    ) async -> [KafkaTopicPartition: Int64] {
        await withTaskGroup(of: (KafkaTopicPartition, Int64?).self) { group in
            for partition in partitions {
                group.addTask {
                    do {
                        // Bound to a name before the tuple is made (AsyncTupleMiscompileTests).
                        let low = try await consumer.watermarks(topic: partition.topic, partition: partition.partition, timeout: timeout).low
                        return (partition, low)
                    } catch {
                        self.logger.debug("Could not ask a partition's first offset", metadata: ["partition": "\(partition)", "error": "\(error)"])
                        return (partition, nil)
                    }
                }
            }
            var lows: [KafkaTopicPartition: Int64] = [:]
            for await (partition, low) in group { lows[partition] = low }
            return lows
        }
    }

    /// Checks, every ``offsetGapsCheckInterval`` until cancelled, the offsets a streaming pipeline's reading jumped
    /// over.
    func keepSettlingOffsetGaps(consumer: KafkaConsumer) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.offsetGapsCheckInterval)
            if Task.isCancelled { return }
            await settleOffsetGaps(consumer: consumer)
        }
    }

    /// Checks where the reading of newly assigned partitions starts: a committed offset below the partition's first
    /// offset still stored means the records between were deleted before anyone read them (the group's earlier
    /// member committed up to there, then retention took the rest while no member read it). Asked at once, before
    /// this reading commits anything of its own; a look-up that fails is logged, not retried (this reading commits
    /// past the point meanwhile).
    func checkCommittedStarts(of partitions: [KafkaTopicPartition], consumer: KafkaConsumer) async {
        let committed: [KafkaTopicPartitionOffset]
        do {
            committed = try await consumer.committed(partitions)
        } catch {
            logger.debug("Could not ask the committed offsets of assigned partitions", metadata: ["error": "\(error)"])
            return
        }
        let starts = committed.filter { $0.offset >= 0 }
        let lows = await lowWatermarks(of: starts.map(\.topicPartition), consumer: consumer, timeout: .seconds(5))
        for start in starts {
            guard let low = lows[start.topicPartition] else { continue }
            noteJump(from: start.offset, to: low, in: start.topicPartition)
        }
    }
}
