public import KafkaClient

/// What a replay reprocesses: for each partition of the sends topic, a range of offsets, and whether anything is
/// written at all.
///
/// A pipeline given a plan reads exactly those ranges (resuming after the offsets its group already committed),
/// judges time by each event's own time, schedules no timers, and stops once every partition reached its end.
public struct ReplayPlan: Sendable, Equatable {
    /// Offsets to process per partition: from the first (included) to the end (excluded).
    public var ranges: [KafkaTopicPartition: Range<Int64>]
    /// Render and count only: write nothing to any topic and commit nothing.
    public var isDryRun: Bool

    /// Creates a plan.
    public init(ranges: [KafkaTopicPartition: Range<Int64>], isDryRun: Bool = false) {
        self.ranges = ranges
        self.isDryRun = isDryRun
    }

    /// The number of records in the ranges.
    public var totalCount: Int64 { ranges.values.reduce(0) { $0 + Int64($1.count) } }

    /// Where a replay whose group has committed `committed` starts `partition`'s range: at the committed offset when
    /// it is past the range's start (a resumed replay; the range's end at most), otherwise at the range's start.
    /// `nil` for a partition the plan does not replay.
    public func start(of partition: KafkaTopicPartition, after committed: [KafkaTopicPartitionOffset]) -> Int64? {
        guard let range = ranges[partition] else { return nil }
        guard let previous = committed.first(where: { $0.topicPartition == partition })?.offset, previous > range.lowerBound else {
            return range.lowerBound
        }
        return min(previous, range.upperBound)
    }

    /// The number of records left to replay when a replay group has committed `committed`
    /// (``start(of:after:)`` to each range's end).
    public func remainingCount(after committed: [KafkaTopicPartitionOffset]) -> Int64 {
        ranges.reduce(0) { total, entry in total + entry.value.upperBound - (start(of: entry.key, after: committed) ?? entry.value.upperBound) }
    }
}

/// How far a replay has come, per partition and in total.
public struct ReplayProgress: Sendable {
    /// One partition's progress.
    public struct Partition: Sendable {
        /// The partition.
        public var partition: KafkaTopicPartition
        /// Records of the range processed.
        public var done: Int64
        /// Records in the range.
        public var total: Int64
    }

    /// Per partition, in partition order.
    public var partitions: [Partition]
    /// Seconds since the replay started reading.
    public var elapsedSeconds: Double
    /// Records of ``done`` that an earlier run of the replay's group did (a resumed replay starts after them).
    public var doneBeforeStart: Int64

    /// Records processed in all partitions.
    public var done: Int64 { partitions.reduce(0) { $0 + $1.done } }
    /// Records in all ranges.
    public var total: Int64 { partitions.reduce(0) { $0 + $1.total } }
    /// Records per second this run has processed so far.
    public var rate: Double { elapsedSeconds > 0 ? Double(max(0, done - doneBeforeStart)) / elapsedSeconds : 0 }
}
