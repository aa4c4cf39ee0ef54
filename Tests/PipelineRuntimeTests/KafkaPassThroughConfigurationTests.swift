import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import Testing

/// librdkafka properties pass through to the clients, except `group.id`, which would override the pipeline's group
/// (and put a replay, which reads in a group of its own, into the live one), the broker list, which would override the
/// configured brokers, and the commit settings, which are the pipeline's.
@Suite("Kafka properties passed through")
struct KafkaPassThroughConfigurationTests {
    @Test("group.id is refused wherever a property can be given, naming where it was")
    func groupIDIsRefused() throws {
        let fromEnvironment = #expect(throws: ConfigurationError.self) {
            try PipelineConfiguration.load(file: nil, environment: ["CAMPAIGN_PIPELINE_KAFKA_GROUP_ID": "campaign-pipeline"])
        }
        #expect(fromEnvironment?.key == "CAMPAIGN_PIPELINE_KAFKA_GROUP_ID")
        #expect(fromEnvironment?.reason.contains("CAMPAIGN_PIPELINE_GROUP") == true)
        for section in ["properties", "consumerProperties"] {
            let file = try #require(try JSONValue(parsing: Array(#"{"kafka": {"\#(section)": {"group.id": "x"}}}"#.utf8)).objectValue)
            let fromFile = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: file, environment: [:]) }
            #expect(fromFile?.key == "kafka.\(section).group.id")
        }
        let other = try PipelineConfiguration.load(file: nil, environment: ["CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCOL": "ssl"])
        #expect(other.kafkaProperties["security.protocol"] == "ssl")
    }

    /// Found by review: `CAMPAIGN_PIPELINE_KAFKA_COMPRESSION_TYPE=` (a compose file's `${VAR}` with `VAR` unset) set
    /// the property to "", which librdkafka refuses, where every other empty variable is unset.
    @Test("an empty CAMPAIGN_PIPELINE_KAFKA_ variable is unset: the file's property stays")
    func emptyVariableIsUnset() throws {
        let file = try #require(try JSONValue(parsing: Array(#"{"kafka": {"properties": {"compression.type": "lz4"}}}"#.utf8)).objectValue)
        let configuration = try PipelineConfiguration.load(file: file, environment: ["CAMPAIGN_PIPELINE_KAFKA_COMPRESSION_TYPE": ""])
        #expect(configuration.kafkaProperties["compression.type"] == "lz4")
    }

    /// Passed through, `bootstrap.servers` (or its librdkafka alias `metadata.broker.list`) won over the brokers of
    /// every layer: `CAMPAIGN_PIPELINE_KAFKA_BOOTSTRAP_SERVERS=prod:9092` sent a `--bootstrap-servers staging:9092` run
    /// (or a `replay --deliver`) to prod, while the log and `--print-config` named staging.
    @Test("bootstrap.servers and metadata.broker.list are refused wherever a property can be given, naming where it was")
    func brokerListIsRefused() throws {
        for (property, variable) in [
            ("bootstrap.servers", "CAMPAIGN_PIPELINE_KAFKA_BOOTSTRAP_SERVERS"), ("metadata.broker.list", "CAMPAIGN_PIPELINE_KAFKA_METADATA_BROKER_LIST"),
        ] {
            let fromEnvironment = #expect(throws: ConfigurationError.self, "\(variable)") {
                try PipelineConfiguration.load(file: nil, environment: [variable: "prod:9092"])
            }
            #expect(fromEnvironment?.key == variable)
            #expect(fromEnvironment?.reason.contains("--bootstrap-servers") == true, "\(String(describing: fromEnvironment))")
            for section in ["properties", "consumerProperties", "producerProperties"] {
                let file = try #require(try JSONValue(parsing: Array(#"{"kafka": {"\#(section)": {"\#(property)": "prod:9092"}}}"#.utf8)).objectValue)
                let fromFile = #expect(throws: ConfigurationError.self, "\(section).\(property)") {
                    try PipelineConfiguration.load(file: file, environment: [:])
                }
                #expect(fromFile?.key == "kafka.\(section).\(property)")
            }
            #expect(throws: ConfigurationError.self, "--kafka-property \(property)") {
                try PipelineConfiguration.checkPassThrough(property, key: "--kafka-property \(property)")
            }
        }
    }

    /// Found by review: `enable.auto.commit=false`, which many Kafka guides advise for at-least-once, was passed
    /// through and accepted; `run` then committed nothing until it stopped (not in the background, not at a
    /// revocation), so every crash and rebalance sent everything since to phones again. And a replay given
    /// `enable.auto.commit=true` committed its positions without the range it is progress in.
    @Test("enable.auto.commit and enable.auto.offset.store are refused wherever a property can be given, and never reach a consumer")
    func commitSettingsAreThePipelines() throws {
        for property in ["enable.auto.commit", "enable.auto.offset.store"] {
            let variable = "CAMPAIGN_PIPELINE_KAFKA_" + String(property.uppercased().map { $0 == "." ? "_" : $0 })
            let fromEnvironment = #expect(throws: ConfigurationError.self, "\(variable)") {
                try PipelineConfiguration.load(file: nil, environment: [variable: "false"])
            }
            #expect(fromEnvironment?.key == variable)
            #expect(fromEnvironment?.reason.contains("auto.commit.interval.ms") == true, "\(String(describing: fromEnvironment))")
            for section in ["properties", "consumerProperties", "producerProperties"] {
                let file = try #require(try JSONValue(parsing: Array(#"{"kafka": {"\#(section)": {"\#(property)": "false"}}}"#.utf8)).objectValue)
                let fromFile = #expect(throws: ConfigurationError.self, "\(section).\(property)") {
                    try PipelineConfiguration.load(file: file, environment: [:])
                }
                #expect(fromFile?.key == "kafka.\(section).\(property)")
            }
            #expect(throws: ConfigurationError.self, "--kafka-property \(property)") {
                try PipelineConfiguration.checkPassThrough(property, key: "--kafka-property \(property)")
            }
        }
        // A configuration built in code is not loaded: its consumers take the pipeline's settings all the same.
        var configuration = PipelineConfiguration(bootstrapServers: ["a:1"])
        configuration.kafkaProperties = ["enable.auto.commit": "false", "enable.auto.offset.store": "true"]
        configuration.consumerProperties = ["auto.commit.interval.ms": "500"]
        let streaming = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
        let properties = Dictionary(streaming.sendsConsumerConfiguration.librdkafkaProperties, uniquingKeysWith: { $1 })
        #expect(properties["enable.auto.commit"] == "true")
        #expect(properties["enable.auto.offset.store"] == "false")
        #expect(properties["auto.commit.interval.ms"] == "500")
        configuration.kafkaProperties = ["enable.auto.commit": "true"]
        let plan = ReplayPlan(ranges: [KafkaTopicPartition(topic: configuration.topics.sends, partition: 0): 0..<10])
        let replay = CampaignPipeline(configuration: configuration, registry: builtinRegistry, replay: plan, logger: testLogger)
        #expect(Dictionary(replay.sendsConsumerConfiguration.librdkafkaProperties, uniquingKeysWith: { $1 })["enable.auto.commit"] == "false")
    }

    @Test("a consumer has every client's properties and the consumers' own, these winning")
    func consumerConfigurationMergesProperties() {
        var configuration = PipelineConfiguration(bootstrapServers: ["a:1"])
        configuration.kafkaProperties = ["security.protocol": "ssl", "fetch.wait.max.ms": "100"]
        configuration.consumerProperties = ["fetch.wait.max.ms": "10"]
        configuration.producerProperties = ["linger.ms": "50"]
        let properties = Dictionary(configuration.consumerConfiguration(groupID: nil).librdkafkaProperties, uniquingKeysWith: { $1 })
        #expect(properties["security.protocol"] == "ssl")
        #expect(properties["fetch.wait.max.ms"] == "10")
        #expect(properties["linger.ms"] == nil)
        #expect(properties["bootstrap.servers"] == "a:1")
        let grouped = Dictionary(configuration.consumerConfiguration(groupID: "g").librdkafkaProperties, uniquingKeysWith: { $1 })
        #expect(grouped["group.id"] == "g")
    }

    /// Found by review: a replay given the streaming deployment's `auto.offset.reset=latest` jumped to a partition's
    /// end when retention deleted its position, and the rest of its range (records still there) was counted as
    /// replayed. A replay's consumer resets to the first record stored, whatever the configuration says; streaming
    /// keeps the configured reset.
    @Test("a replay's consumer resets to the earliest record whatever auto.offset.reset the configuration gives")
    func replayResetsToEarliest() {
        var configuration = PipelineConfiguration(bootstrapServers: ["a:1"])
        configuration.consumerProperties = ["auto.offset.reset": "latest"]
        let plan = ReplayPlan(ranges: [KafkaTopicPartition(topic: configuration.topics.sends, partition: 0): 0..<10])
        for isDryRun in [false, true] {
            var replayPlan = plan
            replayPlan.isDryRun = isDryRun
            let replay = CampaignPipeline(configuration: configuration, registry: builtinRegistry, replay: replayPlan, logger: testLogger)
            let properties = Dictionary(replay.sendsConsumerConfiguration.librdkafkaProperties, uniquingKeysWith: { $1 })
            #expect(properties["auto.offset.reset"] == "earliest", "dry run \(isDryRun)")
            #expect(properties["enable.auto.commit"] == "false")
        }
        let streaming = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
        #expect(Dictionary(streaming.sendsConsumerConfiguration.librdkafkaProperties, uniquingKeysWith: { $1 })["auto.offset.reset"] == "latest")
    }

    /// A later source wins, whatever section the earlier one set the property in: the file's consumer or producer
    /// properties used to beat the environment's (and the flags') properties for every client.
    @Test("a property from the environment wins over the file's consumer and producer properties")
    func environmentWinsOverPerClientProperties() throws {
        let json = #"{"kafka": {"consumerProperties": {"session.timeout.ms": "abc"}, "producerProperties": {"linger.ms": "50"}}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let configuration = try PipelineConfiguration.load(
            file: file,
            environment: ["CAMPAIGN_PIPELINE_KAFKA_SESSION_TIMEOUT_MS": "10000", "CAMPAIGN_PIPELINE_KAFKA_LINGER_MS": "5"]
        )
        let consumer = configuration.consumerConfiguration(groupID: "g").librdkafkaProperties
        #expect(consumer.last { $0.key == "session.timeout.ms" }?.value == "10000")
        #expect(configuration.producerProperties["linger.ms"] == nil)
        #expect(configuration.kafkaProperties["linger.ms"] == "5")
        // The flags' properties go through the same override (RunCommand's `--kafka-property`).
        var flagged = try PipelineConfiguration.load(file: file, environment: [:])
        flagged.overrideKafkaProperty("session.timeout.ms", "12000")
        #expect(flagged.consumerConfiguration(groupID: "g").librdkafkaProperties.last { $0.key == "session.timeout.ms" }?.value == "12000")
    }
}
