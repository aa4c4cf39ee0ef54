public import KafkaClient
public import PipelineCore
public import PlatformSinks
public import PushSinks

/// Everything the streaming pipeline needs to know. Loaded from `Config/pipeline.json`, the environment and
/// command-line flags by the executable (see `Config/README.md` for every key).
public struct PipelineConfiguration: Sendable, Equatable {
    /// The topics the pipeline reads and writes.
    public struct Topics: Sendable, Equatable {
        /// `push.requested` events to render and send.
        public var sends = "campaign.sends"
        /// `campaign.defined` / `campaign.cancelled` events, folded into the campaign table.
        public var definitions = "campaign.definitions"
        /// Rendered FCM request bodies.
        public var fcm = "push.fcm"
        /// Rendered APNs payloads (token and request headers as record headers).
        public var apns = "push.apns"
        /// One terminal analytics event per message.
        public var analytics = "campaign.analytics"
        /// Events that could not be processed, with error headers.
        public var deadLetters = "campaign.dlq"
        /// Pending timer expiries, one record per message id (compacted; tombstoned when fired). Must have as
        /// many partitions as ``sends``: a timer lives in the partition of the send it came from, and fires on
        /// the instance that owns that partition.
        public var timers = "campaign.timers"
        /// `token.invalidated` events for device tokens a platform reported dead (HTTP sinks only).
        public var tokens = "campaign.tokens"

        /// The default names of the contract.
        public init() {}

        /// Every topic, for checks and for creating them on the embedded broker.
        public var all: [String] { [sends, definitions, fcm, apns, analytics, deadLetters, timers, tokens] }

        /// The topics a replay writes to (it schedules no timers, and reports no dead tokens): payloads, analytics and
        /// dead letters.
        public var replayOutputs: [String] { [fcm, apns, analytics, deadLetters] }

        /// Checks that no topic the pipeline writes is one it reads (`sends`, `definitions`): what it wrote there
        /// would be read back as input, without end. The timers topic, read and written, is no other topic either. The
        /// two payload topics may be one.
        ///
        /// - Throws: ``ConfigurationError`` naming the output topic's key and the input it collides with.
        public func validate() throws(ConfigurationError) {
            let inputs = [("sends", sends), ("definitions", definitions)]
            let outputs = [("fcm", fcm), ("apns", apns), ("analytics", analytics), ("deadLetters", deadLetters), ("tokens", tokens), ("timers", timers)]
            if sends == definitions {
                throw ConfigurationError(key: "topics.definitions", reason: "'\(definitions)' is also topics.sends")
            }
            for (role, name) in outputs {
                for (input, inputName) in inputs where name == inputName {
                    throw ConfigurationError(
                        key: "topics.\(role)",
                        reason: "'\(name)' is also topics.\(input): the pipeline would read what it writes there as input"
                    )
                }
                if role != "timers", name == timers {
                    throw ConfigurationError(key: "topics.\(role)", reason: "'\(name)' is also topics.timers, which holds only pending timer expiries")
                }
            }
        }

        /// A copy with `prefix` before every output topic name (the inputs keep their names).
        public func prefixingOutputs(with prefix: String) -> Topics {
            var copy = self
            copy.fcm = prefix + fcm
            copy.apns = prefix + apns
            copy.analytics = prefix + analytics
            copy.deadLetters = prefix + deadLetters
            copy.timers = prefix + timers
            copy.tokens = prefix + tokens
            return copy
        }
    }

    /// Where rendered payloads go, and how the HTTP sinks reach the platforms.
    public struct Sinks: Sendable, Equatable {
        /// The sink kinds each platform's payloads go to, in order: `kafka` (the payload topics), `fcm` (FCM HTTP
        /// v1), `apns` (APNs), or the kind of a sink handed to the pipeline in code. Several at once are allowed; a
        /// message counts as delivered when every one of them took it.
        public var routes: [Platform: [String]] = [.fcm: ["kafka"], .apns: ["kafka"]]
        /// How the HTTP sinks retry throttled and unavailable attempts.
        public var retry = RetryPolicy()
        /// FCM HTTP v1 settings (used when a route names `fcm`).
        public var fcm = FCMSinkConfiguration()
        /// APNs settings (used when a route names `apns`).
        public var apns = APNsSinkConfiguration()

        /// The default: both platforms to the Kafka payload topics.
        public init() {}

        /// Whether any platform is routed to `kind`.
        public func uses(_ kind: String) -> Bool { routes.values.contains { $0.contains(kind) } }

        /// Routes every platform to the Kafka payload topics only (replays that must not reach devices).
        public mutating func routeToKafkaOnly() {
            routes = [.fcm: ["kafka"], .apns: ["kafka"]]
        }
    }

    /// `host:port` of the brokers.
    public var bootstrapServers: [String]
    /// The consumer group the instances of one deployment share.
    public var groupID = "campaign-pipeline"
    /// The topics.
    public var topics = Topics()
    /// The sinks.
    public var sinks = Sinks()
    /// librdkafka properties for every client (TLS, SASL, compression, ...), passed through as they are.
    public var kafkaProperties: [String: String] = [:] {
        // A property set again here no longer comes from where ``overrideKafkaProperty(_:_:source:)`` said.
        didSet { kafkaPropertySources = kafkaPropertySources.filter { oldValue[$0.key] == kafkaProperties[$0.key] } }
    }
    /// librdkafka properties for the consumers only.
    public var consumerProperties: [String: String] = [:]
    /// librdkafka properties for the producer only.
    public var producerProperties: [String: String] = [:]

    /// Where each of ``kafkaProperties`` was set when not by the file's `kafka.properties`: an environment variable, a
    /// flag. Errors name it.
    var kafkaPropertySources: [String: String] = [:]

    /// Sets a librdkafka property for every client from a later source (the environment, a flag): it wins over the
    /// same property set for the consumers or the producer only by an earlier one (the file), as later sources do.
    ///
    /// - Parameter source: where it was set (`CAMPAIGN_PIPELINE_KAFKA_SASL_USERNAME`, `--kafka-property`), which an
    ///   error about it names; `nil` names `kafka.properties`.
    public mutating func overrideKafkaProperty(_ name: String, _ value: String, source: String? = nil) {
        kafkaProperties[name] = value
        kafkaPropertySources[name] = source  // after the property: setting it forgets the source it had
        consumerProperties[name] = nil
        producerProperties[name] = nil
    }
    /// The most events of one partition in flight (read but not yet acknowledged by every sink); beyond it the
    /// partition is paused until half of them are done.
    public var maxInFlightPerPartition = 1_000
    /// How long a graceful shutdown waits for in-flight outputs before abandoning them (uncommitted, so they are
    /// processed again after a restart).
    public var drainTimeout: Duration = .seconds(15)
    /// The first wait before a failed output is sent again; it doubles up to ``maxRetryBackoff``.
    public var retryBackoff: Duration = .milliseconds(500)
    /// The longest wait between two attempts of a failed output.
    public var maxRetryBackoff: Duration = .seconds(30)
    /// How long librdkafka keeps trying one output before reporting it failed (and the pipeline retries it).
    /// `.zero`, the default, is never: librdkafka's idempotent producer keeps retrying in order while the cluster
    /// cannot take the outputs, and the per-partition in-flight limit holds the reading back meanwhile. With a
    /// timeout, an output that timed out is sent again after later outputs of its key that librdkafka had queued
    /// behind it: per-key order can break.
    public var messageTimeout: Duration = .zero
    /// How often a run logs a "Progress" line (events read, outcomes written, rates, what is in flight) while it has
    /// work; `.zero` logs none. A replay shows its own progress instead.
    public var progressLogInterval: Duration = .seconds(30)
    /// How long the consumer group may go on refusing a streaming instance (its principal may not use the group, a
    /// session timeout outside the brokers' bounds, a member of another protocol, a full group: librdkafka asks again
    /// for ever) before the run stops with ``PipelineRuntimeError/groupRefused(group:reason:advice:)``. A refusal that
    /// ends meanwhile (ACLs that reach the brokers, a dead member's session ending) stops nothing.
    public var groupRefusalTimeout: Duration = .seconds(60)
    /// Exit after every assigned partition has been at its end, with nothing in flight, for this long.
    /// `nil` runs until stopped.
    public var untilIdle: Duration?

    /// A configuration for the given brokers with every other setting at its default.
    public init(bootstrapServers: [String]) {
        self.bootstrapServers = bootstrapServers
    }
}

extension PipelineConfiguration {
    /// A consumer of these brokers with every client's and the consumers' properties (TLS, SASL, …), in `groupID`
    /// (`nil`: none joined, for partitions assigned by hand).
    ///
    /// How offsets are committed is the pipeline's (``KafkaConsumerConfiguration/isAutoCommitEnabled``):
    /// `enable.auto.commit` and `enable.auto.offset.store` among the properties are left out (loading refuses them).
    public func consumerConfiguration(groupID: String?) -> KafkaConsumerConfiguration {
        var consumerConfiguration = KafkaConsumerConfiguration(bootstrapServers: bootstrapServers, groupID: groupID)
        consumerConfiguration.properties = kafkaProperties.merging(consumerProperties) { $1 }
        for property in ["enable.auto.commit", "enable.auto.offset.store"] { consumerConfiguration.properties[property] = nil }
        return consumerConfiguration
    }

    /// The configuration of one of the pipeline's producers: ``kafkaProperties`` and ``producerProperties``, its
    /// `client.id` naming its role (unless the properties set one); one not `lingering` sends each record at once,
    /// whatever `linger.ms` the properties set.
    func producerConfiguration(role: KafkaClientRole, lingering: Bool = true) -> KafkaProducerConfiguration {
        var producerConfiguration = KafkaProducerConfiguration(bootstrapServers: bootstrapServers)
        producerConfiguration.clientID = role.clientID
        producerConfiguration.messageTimeout = messageTimeout
        producerConfiguration.properties = kafkaProperties.merging(producerProperties) { $1 }
        if !lingering {
            producerConfiguration.linger = .zero
            for key in ["linger.ms", "queue.buffering.max.ms"] { producerConfiguration.properties[key] = nil }
        }
        return producerConfiguration
    }

    /// Checks the Kafka properties of the pipeline's consumers and producers, names and values, as librdkafka reads
    /// them, without connecting: what the run would refuse as it makes its first client, named by where it was set;
    /// then the properties against each other, as librdkafka checks them when it makes a client (one is made with no
    /// broker to reach, and destroyed at once).
    ///
    /// - Throws: ``ConfigurationError`` whose key is where the first property refused was set
    ///   (`kafka.consumerProperties.session.timeout.ms`, `CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCL`,
    ///   `--kafka-property`), and whose reason is librdkafka's (without the value, which may be a secret).
    public func validateKafkaProperties() throws(ConfigurationError) {
        let consumer = consumerConfiguration(groupID: groupID, role: .sends)
        let producer = producerConfiguration(role: .outputs)
        // One by one, to name the source of the one refused.
        let sets: [(properties: [String: String], forConsumers: Bool, source: (String) -> String)] = [
            (kafkaProperties, true, { kafkaPropertySources[$0] ?? "kafka.properties.\($0)" }),
            (consumerProperties, true, { "kafka.consumerProperties.\($0)" }),
            (producerProperties, false, { "kafka.producerProperties.\($0)" }),
        ]
        // Each with the plugins that may define it, loaded first.
        let consumerPlugins = consumer.properties.filter { $0.key == "plugin.library.paths" }
        let producerPlugins = producer.properties.filter { $0.key == "plugin.library.paths" }
        for set in sets {
            for (name, value) in set.properties.sorted(by: { $0.key < $1.key }) {
                var consumerAlone = consumer
                var producerAlone = producer
                consumerAlone.properties = consumerPlugins.merging([name: value]) { $1 }
                producerAlone.properties = producerPlugins.merging([name: value]) { $1 }
                do {
                    try set.forConsumers ? consumerAlone.validateProperties() : producerAlone.validateProperties()
                } catch {
                    throw ConfigurationError(key: set.source(name), reason: error.message)
                }
            }
        }
        // Then together, as librdkafka checks them when it makes a client.
        for (clients, configuration) in [("the consumers", consumer.validate), ("the producers", producer.validate)] as [(String, () throws(KafkaError) -> Void)] {
            do {
                try configuration()
            } catch {
                throw ConfigurationError(key: "kafka", reason: "librdkafka refuses \(clients)' properties: \(error.message)")
            }
        }
    }

    /// ``consumerConfiguration(groupID:)`` for one of the pipeline's own consumers: its `client.id` names its role
    /// (unless the properties set one).
    public func consumerConfiguration(groupID: String?, role: KafkaClientRole) -> KafkaConsumerConfiguration {
        var consumerConfiguration = consumerConfiguration(groupID: groupID)
        consumerConfiguration.clientID = role.clientID
        return consumerConfiguration
    }
}
