/// Settings for a ``KafkaProducer``.
///
/// The typed settings cover what the pipeline needs; ``properties`` passes any other librdkafka property through
/// unchanged (`security.protocol`, `sasl.*`, `ssl.*`, `compression.type`, ...), so TLS and SASL clusters work
/// without code changes. A key in ``properties`` wins over the typed setting it overlaps.
public struct KafkaProducerConfiguration: Sendable {
    /// `host:port` of one or more brokers (`bootstrap.servers`).
    public var bootstrapServers: [String]
    /// Exactly-once per partition from the producer to the broker (`enable.idempotence`). On by default.
    public var isIdempotent: Bool = true
    /// How long librdkafka keeps trying to deliver a message before reporting a delivery failure
    /// (`message.timeout.ms`); `.zero` is never.
    public var messageTimeout: Duration = .seconds(30)
    /// How long to wait for more messages to fill a batch (`linger.ms`).
    public var linger: Duration = .milliseconds(5)
    /// The client id the brokers see (`client.id`).
    public var clientID: String = "campaign-pipeline"
    /// Any other librdkafka property, passed through as is.
    public var properties: [String: String] = [:]

    /// Creates a configuration for the given brokers.
    public init(bootstrapServers: [String], properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
    }

    /// The flat librdkafka property list this configuration stands for, typed settings first.
    public var librdkafkaProperties: [(key: String, value: String)] {
        var result: [(key: String, value: String)] = [
            ("bootstrap.servers", bootstrapServers.joined(separator: ",")),
            ("enable.idempotence", isIdempotent ? "true" : "false"),
            ("message.timeout.ms", String(messageTimeout.milliseconds)),
            ("linger.ms", String(linger.milliseconds)),
            ("client.id", clientID),
        ]
        result.merge(overrides: properties)
        return result
    }

    /// Checks every property's name and value as librdkafka reads them, one by one, without making a client.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property refused (not its value).
    public func validateProperties() throws(KafkaError) {
        try RDKafkaConfig.check(librdkafkaProperties)
    }

    /// Checks the configuration as ``KafkaProducer/init(configuration:logger:)`` would take it: each property, then
    /// the properties against each other, for which a client is made with no broker to reach (it connects nowhere)
    /// and destroyed at once.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property refused (not its value), or with
    ///   librdkafka's reason for properties that do not go together.
    public func validate() throws(KafkaError) {
        try validateProperties()
        try RDKafkaConfig.checkClient(librdkafkaProperties, isConsumer: false)
    }
}

/// Settings for a ``KafkaConsumer``.
///
/// Offsets are committed only for positions the application marks done (``KafkaConsumer/storeOffsets(_:)`` or
/// ``KafkaConsumer/commit(_:)``): `enable.auto.offset.store` is always off, so nothing is committed just because it
/// was read. ``properties`` passes any other librdkafka property through unchanged.
public struct KafkaConsumerConfiguration: Sendable {
    /// Where a group starts in a partition that has no committed offset.
    public enum OffsetReset: String, Sendable {
        /// The first stored record.
        case earliest
        /// Only records produced from now on.
        case latest
    }

    /// `host:port` of one or more brokers (`bootstrap.servers`).
    public var bootstrapServers: [String]
    /// The consumer group (`group.id`). Required for ``KafkaConsumer/subscribe(topics:)`` and commits; a consumer
    /// that only assigns partitions may leave it `nil`.
    public var groupID: String?
    /// Where to start without a committed offset (`auto.offset.reset`).
    public var offsetReset: OffsetReset = .earliest
    /// Commit stored offsets in the background every ``autoCommitInterval`` (`enable.auto.commit`). Only offsets
    /// marked done are ever stored.
    public var isAutoCommitEnabled: Bool = true
    /// How often stored offsets are committed in the background (`auto.commit.interval.ms`).
    public var autoCommitInterval: Duration = .seconds(1)
    /// The group session timeout (`session.timeout.ms`).
    public var sessionTimeout: Duration = .seconds(10)
    /// How long to wait for a broker when the consumer starts before failing with
    /// ``KafkaError/Code/brokerUnreachable``.
    public var connectTimeout: Duration = .seconds(10)
    /// The most messages handed over in one batch.
    public var maxBatchSize: Int = 1_000
    /// The most messages held between librdkafka and the application; when full, fetching waits.
    public var bufferCapacity: Int = 10_000
    /// The client id the brokers see (`client.id`).
    public var clientID: String = "campaign-pipeline"
    /// Any other librdkafka property, passed through as is.
    public var properties: [String: String] = [:]
    /// Called when partitions are about to be taken from this consumer (a rebalance, a lost assignment, or
    /// ``KafkaConsumer/close()``), before the positions stored for them are committed and before they leave
    /// librdkafka's assignment. From the call on they are no longer in ``KafkaConsumer/assignment`` and
    /// ``KafkaConsumer/isReading(_:generation:)`` is `false` for them, so work that checks either starts nothing
    /// new for them.
    ///
    /// It runs on the consumer's poll thread, which may block here but reads nothing meanwhile, and a group's
    /// rebalance waits for it (as for Java's `onPartitionsRevoked`): finish what must happen before the partitions'
    /// next owner starts, and return well within `max.poll.interval.ms`. Positions stored meanwhile are committed
    /// with the revocation (auto-commit on).
    public var willRevokePartitions: (@Sendable (Set<KafkaTopicPartition>) -> Void)?

    /// Creates a configuration for the given brokers and group.
    public init(bootstrapServers: [String], groupID: String?, properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.groupID = groupID
        self.properties = properties
    }

    /// Whether a partition without a committed offset is read from its end, as librdkafka reads `auto.offset.reset`
    /// here: ``offsetReset``, unless a property overrides it (`latest`, `largest` and `end` are its end).
    public var startsAtEndWithoutCommit: Bool {
        let reset = librdkafkaProperties.last { $0.key == "auto.offset.reset" }?.value ?? offsetReset.rawValue
        return ["latest", "largest", "end"].contains(reset)
    }

    /// The flat librdkafka property list this configuration stands for, typed settings first.
    public var librdkafkaProperties: [(key: String, value: String)] {
        var result: [(key: String, value: String)] = [
            ("bootstrap.servers", bootstrapServers.joined(separator: ",")),
            ("auto.offset.reset", offsetReset.rawValue),
            ("enable.auto.commit", isAutoCommitEnabled ? "true" : "false"),
            ("auto.commit.interval.ms", String(autoCommitInterval.milliseconds)),
            ("session.timeout.ms", String(sessionTimeout.milliseconds)),
            ("client.id", clientID),
            ("enable.partition.eof", "false"),
        ]
        if let groupID {
            result.append(("group.id", groupID))
        } else {
            // librdkafka needs a group id even to assign partitions by hand; this one is never joined or
            // committed to.
            result.append(("group.id", "campaign-pipeline-unjoined-\(UInt64.random(in: 0...UInt64.max))"))
            result.merge(overrides: ["enable.auto.commit": "false"])
        }
        result.merge(overrides: properties)
        // Offsets are stored only when the application says a message is done.
        result.merge(overrides: ["enable.auto.offset.store": "false"])
        return result
    }

    /// Checks every property's name and value as librdkafka reads them, one by one, without making a client.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property refused (not its value).
    public func validateProperties() throws(KafkaError) {
        try RDKafkaConfig.check(librdkafkaProperties)
    }

    /// Checks the configuration as ``KafkaConsumer/init(configuration:logger:)`` would take it: each property, then
    /// the properties against each other, for which a client is made with no broker to reach (it connects nowhere and
    /// joins no group) and destroyed at once.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property refused (not its value), or with
    ///   librdkafka's reason for properties that do not go together.
    public func validate() throws(KafkaError) {
        try validateProperties()
        try RDKafkaConfig.checkClient(librdkafkaProperties, isConsumer: true)
    }
}

extension Array where Element == (key: String, value: String) {
    /// Replaces the value of keys already present and appends the others, in key order, `plugin.library.paths`
    /// first: librdkafka loads the plugins as it is set, and only then knows the properties they add
    /// (`confluent.monitoring.interceptor.*` sorts before it).
    mutating func merge(overrides: [String: String]) {
        let plugins = "plugin.library.paths"
        let ordered = overrides.sorted { first, second in
            first.key == plugins || second.key == plugins ? first.key == plugins && second.key != plugins : first.key < second.key
        }
        for (key, value) in ordered {
            if let index = firstIndex(where: { $0.key == key }) {
                self[index].value = value
            } else {
                append((key, value))
            }
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded down, at least 0 (and at most `Int64.max`).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000)
        let (total, carried) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !overflow, !carried else { return seconds < 0 ? 0 : .max }
        return Swift.max(0, total)
    }
}
