import KafkaClient

/// When each partition read towards an end offset, but stalled short of it, is next asked what is left to read
/// (``KafkaConsumer/remainder(from:before:in:timeout:)``): the end may be offsets no consumer is given (transaction
/// markers, aborted records), which a reader waiting for records would wait for forever. Used by replays, the
/// start-up fold of the state topics and the definitions catch-up.
struct PartitionStalls {
    /// A partition's position when it was last seen to move, and when its next check is due.
    private struct Stall {
        var position: Int64
        var due: ContinuousClock.Instant
        var wait: Duration
    }

    /// How long a position stays put before the first check.
    let firstWait: Duration
    /// The longest wait between checks of a partition whose next record is still to come.
    let longestWait: Duration

    private var stalls: [KafkaTopicPartition: Stall] = [:]

    init(firstWait: Duration, longestWait: Duration = .seconds(30)) {
        self.firstWait = firstWait
        self.longestWait = longestWait
    }

    /// Whether `partition`, now at `position`, has stayed there long enough to be checked.
    mutating func isDue(_ partition: KafkaTopicPartition, at position: Int64, now: ContinuousClock.Instant) -> Bool {
        guard let stall = stalls[partition], stall.position == position else {
            stalls[partition] = Stall(position: position, due: now + firstWait, wait: firstWait)
            return false
        }
        return now >= stall.due
    }

    /// Notes that a readable record is still to come (or the check failed): check again later, waiting twice as
    /// long each time.
    mutating func checkLater(_ partition: KafkaTopicPartition, now: ContinuousClock.Instant) {
        guard var stall = stalls[partition] else { return }
        stall.wait = min(stall.wait * 2, longestWait)
        stall.due = now + stall.wait
        stalls[partition] = stall
    }
}
