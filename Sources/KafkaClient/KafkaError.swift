/// An error raised by the Kafka layer.
///
/// Every error says what failed (``code``), the human-readable ``message``, the librdkafka error name when
/// librdkafka reported it (for example `_MSG_TIMED_OUT` or `UNKNOWN_TOPIC_OR_PART`), and the topic and partition
/// it concerns when there is one.
public struct KafkaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static members (`error.code == .deliveryFailed`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidConfiguration
            case clientCreationFailed
            case brokerUnreachable
            case deliveryFailed
            case enqueueFailed
            case consumerFailed
            case commitFailed
            case seekFailed
            case offsetLookupFailed
            case metadataFailed
            case fatal
            case closed
            case cancelled
            case embeddedBrokerFailed
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A configuration property is unknown or its value is invalid.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// librdkafka refused to create the client.
        public static let clientCreationFailed = Code(.clientCreationFailed)
        /// No broker of the bootstrap list answered in time.
        public static let brokerUnreachable = Code(.brokerUnreachable)
        /// A produced message was not acknowledged by the cluster (timed out, rejected, purged).
        public static let deliveryFailed = Code(.deliveryFailed)
        /// A message could not even be queued for sending (too large, unknown partition, ...).
        public static let enqueueFailed = Code(.enqueueFailed)
        /// The consumer failed while fetching.
        public static let consumerFailed = Code(.consumerFailed)
        /// An offset commit was refused.
        public static let commitFailed = Code(.commitFailed)
        /// Moving a partition's position failed.
        public static let seekFailed = Code(.seekFailed)
        /// Looking up offsets (for a timestamp or the watermarks) failed.
        public static let offsetLookupFailed = Code(.offsetLookupFailed)
        /// Reading cluster metadata failed.
        public static let metadataFailed = Code(.metadataFailed)
        /// The client hit a fatal error and cannot be used any more.
        public static let fatal = Code(.fatal)
        /// The client was already closed.
        public static let closed = Code(.closed)
        /// The task waiting for a look-up was cancelled; the look-up was abandoned (or never made).
        public static let cancelled = Code(.cancelled)
        /// The embedded (mock) broker could not be started or configured.
        public static let embeddedBrokerFailed = Code(.embeddedBrokerFailed)

        public var description: String {
            switch value {
            case .invalidConfiguration: "invalid configuration"
            case .clientCreationFailed: "client creation failed"
            case .brokerUnreachable: "broker unreachable"
            case .deliveryFailed: "delivery failed"
            case .enqueueFailed: "enqueue failed"
            case .consumerFailed: "consumer failed"
            case .commitFailed: "commit failed"
            case .seekFailed: "seek failed"
            case .offsetLookupFailed: "offset lookup failed"
            case .metadataFailed: "metadata failed"
            case .fatal: "fatal client error"
            case .closed: "client closed"
            case .cancelled: "cancelled"
            case .embeddedBrokerFailed: "embedded broker failed"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in words.
    public var message: String
    /// librdkafka's name for the error code (`rd_kafka_err2name`), when librdkafka reported one.
    public var librdkafkaName: String?
    /// The topic the error concerns, if any.
    public var topic: String?
    /// The partition the error concerns, if any.
    public var partition: Int32?
    /// Whether retrying the same operation later may succeed.
    public var isRetriable: Bool

    /// Creates an error.
    public init(
        code: Code,
        message: String,
        librdkafkaName: String? = nil,
        topic: String? = nil,
        partition: Int32? = nil,
        isRetriable: Bool = false
    ) {
        self.code = code
        self.message = message
        self.librdkafkaName = librdkafkaName
        self.topic = topic
        self.partition = partition
        self.isRetriable = isRetriable
    }

    public var description: String {
        var text = "Kafka \(code)"
        if let topic {
            text += " [\(topic)"
            if let partition { text += "/\(partition)" }
            text += "]"
        }
        if let librdkafkaName { text += " (\(librdkafkaName))" }
        return text + ": " + message
    }
}

extension KafkaError {
    /// Whether this is a group coordinator's refusal of a member, as a subscribed consumer reports it (a
    /// ``KafkaConsumer/Event/error(_:)`` from the coordinator look-up, the join or the committed offsets' look-up after
    /// it, which librdkafka goes on retrying for as long as the consumer runs): the principal may not use the group
    /// (ACLs), the session timeout is outside the brokers' bounds, a member of the group uses another protocol, or the
    /// group has the brokers' `group.max.size` members. Asking again changes none of them until the cluster or the
    /// group does (ACLs that reach the brokers, members that leave).
    public var isGroupRefusal: Bool {
        switch librdkafkaName {
        case "GROUP_AUTHORIZATION_FAILED", "INVALID_SESSION_TIMEOUT", "INCONSISTENT_GROUP_PROTOCOL", "GROUP_MAX_SIZE_REACHED": true
        default: false
        }
    }
}
