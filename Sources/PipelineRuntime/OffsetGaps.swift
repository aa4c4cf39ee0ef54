import KafkaClient

/// The offsets a reading of the sends topic passed over, and those of them the topic had deleted.
///
/// A partition is read in order, so its reading jumps over offsets only where they hold nothing it is given
/// (transaction markers, records of aborted transactions, records compaction removed) or where the records were
/// deleted before it read them: retention (a pipeline lagging or stopped for longer than the topic keeps records; the
/// start of a long replay range), or a deletion of records. librdkafka reads on from the first offset still stored
/// then, and says so only in its log. Each jump is noted, then checked against the partition's low watermark, the
/// first offset still stored: what lies below it was deleted, and was never read. (An offset below it that held a
/// marker counts too: "up to" that many records.)
struct OffsetGaps {
    /// Offsets passed over and not yet checked, per partition.
    private(set) var unchecked: [KafkaTopicPartition: [Range<Int64>]] = [:]
    /// Offsets found deleted before they were read, per partition, in the order found.
    private(set) var deleted: [KafkaTopicPartition: [Range<Int64>]] = [:]

    /// Notes that the reading of `partition` went from `expected` (the offset after the last it read, or where it was
    /// to start) to `next`.
    mutating func note(from expected: Int64, to next: Int64, in partition: KafkaTopicPartition) {
        guard next > expected else { return }
        unchecked[partition, default: []].append(expected..<next)
    }

    /// Whether every offset passed over has been checked.
    var isSettled: Bool { unchecked.isEmpty }

    /// Checks the offsets passed over in `partition` against its low watermark `low`, and returns those found
    /// deleted (what lies below `low`).
    mutating func settle(_ partition: KafkaTopicPartition, lowWatermark low: Int64) -> [Range<Int64>] {
        guard let gaps = unchecked.removeValue(forKey: partition) else { return [] }
        let found = gaps.compactMap { gap -> Range<Int64>? in
            let end = min(gap.upperBound, low)
            return end > gap.lowerBound ? gap.lowerBound..<end : nil
        }
        if !found.isEmpty { deleted[partition, default: []].append(contentsOf: found) }
        return found
    }

    /// How many offsets were found deleted, in every partition.
    var deletedCount: Int64 {
        deleted.values.reduce(0) { total, ranges in total + ranges.reduce(0) { $0 + Int64($1.count) } }
    }
}
