import KafkaClient

/// When each stalled partition of a replay is next asked whether its range still holds a readable record.
struct ReplayStalls {
    /// A partition's position when it was last seen to move, and when its next check is due.
    private struct Stall {
        var position: Int64
        var due: ContinuousClock.Instant
        var wait: Duration
    }

    /// How long a position stays put before the first check.
    static let firstWait: Duration = .seconds(1)
    /// The longest wait between checks of a partition whose next record is still to come.
    static let longestWait: Duration = .seconds(30)

    private var stalls: [KafkaTopicPartition: Stall] = [:]

    /// Whether `partition`, now at `position`, has stayed there long enough to be checked.
    mutating func isDue(_ partition: KafkaTopicPartition, at position: Int64, now: ContinuousClock.Instant) -> Bool {
        guard let stall = stalls[partition], stall.position == position else {
            stalls[partition] = Stall(position: position, due: now + Self.firstWait, wait: Self.firstWait)
            return false
        }
        return now >= stall.due
    }

    /// Notes that a readable record is still to come (or the check failed): check again later, waiting twice as
    /// long each time.
    mutating func checkLater(_ partition: KafkaTopicPartition, now: ContinuousClock.Instant) {
        guard var stall = stalls[partition] else { return }
        stall.wait = min(stall.wait * 2, Self.longestWait)
        stall.due = now + stall.wait
        stalls[partition] = stall
    }
}
