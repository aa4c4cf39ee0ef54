public import Logging

/// What one of the pipeline's Kafka clients is for. It has two producers and two consumers (and a short-lived third
/// at start-up), which logged alike ("Producer closed with unacknowledged records" from either producer) and showed
/// the brokers one `client.id`: each carries its role in its log lines (`kafka.role`) and in its `client.id`
/// (`campaign-pipeline-<role>`), which ACLs and quotas can name.
public enum KafkaClientRole: String, Sendable {
    /// The producer of payloads, analytics events, dead letters and timer records.
    case outputs
    /// The producer of decision times records (it sends at once, with no `linger.ms`).
    case decisionTimes = "decision-times"
    /// The group consumer of the sends topic.
    case sends
    /// The consumer of the state topics (campaign definitions, timers), in no group.
    case state
    /// The group member that asks the committed offsets at start-up.
    case committedOffsets = "committed-offsets"
    /// A replay's member of its lease group (``ReplayLease``), which reads nothing.
    case replayLease = "replay-lease"
    /// A replay's look-ups before it runs: the range's offsets, and what its group committed in the range.
    case replayLookup = "replay-lookup"

    /// The client's `client.id`, unless the properties set one.
    public var clientID: String { "campaign-pipeline-\(rawValue)" }

    /// `logger` with the role in its metadata.
    public func logger(_ logger: Logger) -> Logger {
        var logger = logger
        logger[metadataKey: "kafka.role"] = "\(rawValue)"
        return logger
    }
}
