import PipelineCore
import PipelineRuntime
import PlatformSinks
import Testing

/// An empty consumer group or topic name used to be accepted at load and to fail later, if at all, with librdkafka's
/// words ("Local: Unknown group") and no key named; an empty output topic passed the start-up check.
@Suite("Configuration: names of the group and the topics")
struct ConfigurationNamesTests {
    @Test(
        "an empty group or topic name is refused at load, naming the key",
        arguments: ["kafka.groupId"] + ["sends", "definitions", "fcm", "apns", "analytics", "deadLetters", "timers", "tokens"].map { "topics.\($0)" }
    )
    func emptyNamesAreRefused(key: String) throws {
        let parts = key.split(separator: ".")
        let json = #"{"\#(parts[0])": {"\#(parts[1])": ""}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self, "\(json)") {
            try PipelineConfiguration.load(file: file, environment: [:])
        }
        #expect(error?.key == key, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
        #expect(error?.reason.contains("empty") == true, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
    }

    /// An operator's trial: `CAMPAIGN_PIPELINE_GROUPID=x` was ignored without a word, and the instance joined the
    /// default group. Misspelt keys of the file were refused; misspelt variables now are too.
    @Test("an unknown CAMPAIGN_PIPELINE_* variable is refused naming it; the variables read and other programs' are not")
    func unknownVariablesAreRefused() throws {
        for name in ["CAMPAIGN_PIPELINE_GROUPID", "CAMPAIGN_PIPELINE_BOOTSTRAP_SERVER", "CAMPAIGN_PIPELINE_"] {
            let error = #expect(throws: ConfigurationError.self, "\(name)") {
                try PipelineConfiguration.load(file: nil, environment: [name: "x", "CAMPAIGN_PIPELINE_GROUP": "g"])
            }
            #expect(error?.key == name)
            #expect(error?.reason.hasPrefix("unknown variable (expected CAMPAIGN_PIPELINE_CONFIG, CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS,") == true, "\(String(describing: error))")
            #expect(error?.reason.hasSuffix("or CAMPAIGN_PIPELINE_KAFKA_<PROPERTY> for a librdkafka property)") == true, "\(String(describing: error))")
        }
        var known = Dictionary(uniqueKeysWithValues: PipelineConfiguration.EnvironmentKey.all.map { ($0, "") })
        known["CAMPAIGN_PIPELINE_KAFKA_LINGER_MS"] = "7"
        known["CAMPAIGN_PIPELINE_GROUP"] = "g"
        known["KAFKA_HOME"] = "/opt/kafka"
        known["PIPELINE_GROUPID"] = "not ours"
        let configuration = try PipelineConfiguration.load(file: nil, environment: known)
        #expect(configuration.groupID == "g")
        #expect(configuration.kafkaProperties["linger.ms"] == "7")
    }

    /// Kubernetes gives every container variables for each Service of its namespace: a Service named
    /// `campaign-pipeline` (for the metrics port) made `run` exit at once (`CAMPAIGN_PIPELINE_PORT: unknown variable`),
    /// and one named `campaign-pipeline-kafka` made librdkafka properties (`port`, `service.host`) that failed the start.
    @Test("Kubernetes service-link variables are neither unknown variables nor librdkafka properties")
    func serviceLinksAreNotOurs() throws {
        var environment: [String: String] = ["CAMPAIGN_PIPELINE_GROUP": "g", "CAMPAIGN_PIPELINE_KAFKA_LINGER_MS": "7"]
        // What a Service with the port 9464 named `metrics` gives, after its name.
        let links = [
            "SERVICE_HOST": "10.96.0.12", "SERVICE_PORT": "9464", "SERVICE_PORT_METRICS": "9464", "PORT": "tcp://10.96.0.12:9464",
            "PORT_9464_TCP": "tcp://10.96.0.12:9464", "PORT_9464_TCP_PROTO": "tcp", "PORT_9464_TCP_PORT": "9464", "PORT_9464_TCP_ADDR": "10.96.0.12",
        ]
        for service in ["CAMPAIGN_PIPELINE", "CAMPAIGN_PIPELINE_KAFKA", "CAMPAIGN_PIPELINE_METRICS"] {
            for (suffix, value) in links { environment["\(service)_\(suffix)"] = value }
        }
        let configuration = try PipelineConfiguration.load(file: nil, environment: environment)
        #expect(configuration.groupID == "g")
        #expect(configuration.kafkaProperties == ["linger.ms": "7"], "\(configuration.kafkaProperties)")
        try configuration.validateKafkaProperties()

        typealias Key = PipelineConfiguration.EnvironmentKey
        // The pipeline's own variables are not links, nor are names that only look like them.
        #expect(!Key.isServiceLink(Key.metricsPort, "9464"))
        #expect(Key.isServiceLink(Key.metricsPort, "tcp://10.96.0.12:9464"))
        for name in Key.all { #expect(!Key.isServiceLink(name, "x"), "\(name)") }
        for name in ["CAMPAIGN_PIPELINE_PORT_X_TCP", "CAMPAIGN_PIPELINE_PORT_9464_HTTP", "CAMPAIGN_PIPELINE_PORT_9464_TCP_HOST", "CAMPAIGN_PIPELINE_PORT_9464"] {
            #expect(!Key.isServiceLink(name, "tcp://10.96.0.12:9464"), "\(name)")
            let error = #expect(throws: ConfigurationError.self, "\(name)") {
                try PipelineConfiguration.load(file: nil, environment: [name: "tcp://10.96.0.12:9464"])
            }
            #expect(error?.key == name)
        }
        // A misspelt variable is still refused beside them.
        environment["CAMPAIGN_PIPELINE_GROUPID"] = "x"
        let error = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: nil, environment: environment) }
        #expect(error?.key == "CAMPAIGN_PIPELINE_GROUPID")
    }

    /// `fcm.serviceAccountEnv` and `apns.privateKeyEnv` name a variable of the user's choosing: one with the project's
    /// prefix was refused as unknown (and under `CAMPAIGN_PIPELINE_KAFKA_` would have been made a property).
    @Test("a variable the configuration names for a secret is not an unknown variable, whatever its name")
    func secretVariablesNamedByTheFileAreKnown() throws {
        let json = #"{"fcm": {"serviceAccountEnv": "CAMPAIGN_PIPELINE_FCM_KEY_JSON"}, "apns": {"privateKeyEnv": "CAMPAIGN_PIPELINE_KAFKA_P8"}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let environment = ["CAMPAIGN_PIPELINE_FCM_KEY_JSON": "{}", "CAMPAIGN_PIPELINE_KAFKA_P8": "-----BEGIN PRIVATE KEY-----"]
        let configuration = try PipelineConfiguration.load(file: file, environment: environment)
        #expect(configuration.sinks.fcm.serviceAccount == .environment(name: "CAMPAIGN_PIPELINE_FCM_KEY_JSON"))
        #expect(configuration.kafkaProperties.isEmpty, "\(configuration.kafkaProperties)")
        // Without the file naming it, the same variable is unknown.
        let error = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: nil, environment: environment) }
        #expect(error?.key == "CAMPAIGN_PIPELINE_FCM_KEY_JSON")
    }

    /// `["a:1", ""]` was taken and printed as `a:1,`.
    @Test("an empty entry of kafka.bootstrapServers is refused, naming its place")
    func emptyBrokerEntriesAreRefused() throws {
        let file = try #require(try JSONValue(parsing: Array(#"{"kafka": {"bootstrapServers": ["a:1", " "]}}"#.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: file, environment: [:]) }
        #expect(error?.key == "kafka.bootstrapServers[1]")
        #expect(error?.reason == "an empty broker address")
        let spaced = try #require(try JSONValue(parsing: Array(#"{"kafka": {"bootstrapServers": [" a:1", "b:2 "]}}"#.utf8)).objectValue)
        #expect(try PipelineConfiguration.load(file: spaced, environment: [:]).bootstrapServers == ["a:1", "b:2"])
    }

    /// `run --print-config` is how a configuration is checked before a run; it passed properties the run's first client
    /// then refused, and that refusal named the property but not where it was set (a variable, the file, a flag).
    @Test("the Kafka properties are checked, names and values, without a broker, naming where each was set")
    func kafkaPropertiesAreValidated() throws {
        let json = #"{"kafka": {"properties": {"linger.ms": "soon"}, "consumerProperties": {"session.timeout.ms": "abc"}, "producerProperties": {"compression.type": "brotli"}}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        var configuration = try PipelineConfiguration.load(file: file, environment: ["CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCL": "ssl"])
        for (key, property, value) in [
            ("kafka.properties.linger.ms", "linger.ms", "soon"),
            ("CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCL", "security.protocl", "ssl"),
            ("kafka.consumerProperties.session.timeout.ms", "session.timeout.ms", "abc"),
            ("kafka.producerProperties.compression.type", "compression.type", "brotli"),
        ] {
            let error = #expect(throws: ConfigurationError.self, "\(key)") { try configuration.validateKafkaProperties() }
            #expect(error?.key == key, "\(String(describing: error))")
            #expect(error?.reason.hasPrefix("property '\(property)' (value not shown): ") == true, "\(String(describing: error))")
            #expect(error?.reason.contains(value) == false, "values are not shown: \(String(describing: error))")
            // The next one refused, once this one is mended.
            configuration.kafkaProperties[property] = nil
            configuration.consumerProperties[property] = nil
            configuration.producerProperties[property] = nil
        }
        try configuration.validateKafkaProperties()
        configuration.overrideKafkaProperty("fetch.wait.max.ms", "-5", source: "--kafka-property")
        let error = #expect(throws: ConfigurationError.self) { try configuration.validateKafkaProperties() }
        #expect(error?.key == "--kafka-property", "\(String(describing: error))")
        // Set again directly, it is no longer the flag's.
        configuration.kafkaProperties["fetch.wait.max.ms"] = "-6"
        let again = #expect(throws: ConfigurationError.self) { try configuration.validateKafkaProperties() }
        #expect(again?.key == "kafka.properties.fetch.wait.max.ms", "\(String(describing: again))")
        // Properties that librdkafka takes one by one but not together, which it finds only as it makes a client.
        configuration.kafkaProperties = [:]
        configuration.producerProperties = ["acks": "1"]
        let acks = #expect(throws: ConfigurationError.self) { try configuration.validateKafkaProperties() }
        #expect(acks?.key == "kafka", "\(String(describing: acks))")
        #expect(acks?.reason.hasPrefix("librdkafka refuses the producers' properties: ") == true, "\(String(describing: acks))")
        #expect(acks?.reason.contains("enable.idempotence") == true, "the pipeline's idempotent producer: \(String(describing: acks))")
        configuration.producerProperties = [:]
        configuration.consumerProperties = ["max.poll.interval.ms": "5000"]
        let poll = #expect(throws: ConfigurationError.self) { try configuration.validateKafkaProperties() }
        #expect(poll?.reason.hasPrefix("librdkafka refuses the consumers' properties: ") == true, "\(String(describing: poll))")
        #expect(poll?.reason.contains("session.timeout.ms") == true, "the pipeline's 10 s session: \(String(describing: poll))")
        configuration.consumerProperties = [:]
        // A short value is hidden where librdkafka quotes it, and the rest of the reason is left whole.
        configuration.kafkaProperties = ["session.timeout.ms": "0"]
        let short = #expect(throws: ConfigurationError.self) { try configuration.validateKafkaProperties() }
        #expect(short?.reason.contains("1..3600000") == true, "\(String(describing: short))")
    }

    /// Found by review: `kafka`, `fcm` and `apns` said only "unknown key", where the other sections list theirs.
    @Test(
        "an unknown key is refused naming the keys its section takes",
        arguments: [
            ("kafka", "groupid", "groupId"), ("fcm", "projectID", "projectId"), ("apns", "keyID", "keyId"),
            ("apns", "timeout", "requestTimeoutSeconds"), ("processing", "drainTimeout", "drainTimeoutSeconds"),
        ]
    )
    func unknownKeysListTheKnownOnes(section: String, key: String, known: String) throws {
        let json = #"{"\#(section)": {"\#(key)": "x"}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self, "\(json)") {
            try PipelineConfiguration.load(file: file, environment: [:], checkingSinkCredentials: false)
        }
        #expect(error?.key == "\(section).\(key)")
        #expect(error?.reason.hasPrefix("unknown key (expected ") == true, "\(String(describing: error))")
        #expect(error?.reason.contains(known) == true, "\(String(describing: error))")
    }

    /// The pipeline reads what it writes to an input topic: analytics or dead letters written to the sends topic would
    /// come back as sends, be rejected, and write more of themselves, without end. Such a configuration was accepted.
    @Test(
        "an output topic named like an input topic is refused, naming both roles",
        arguments: [("analytics", "sends"), ("deadLetters", "sends"), ("fcm", "definitions"), ("timers", "sends"), ("tokens", "definitions")]
    )
    func outputsDifferFromInputs(output: String, input: String) throws {
        let json = #"{"topics": {"\#(output)": "campaign.\#(input)"}}"#
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self, "\(json)") {
            try PipelineConfiguration.load(file: file, environment: [:])
        }
        #expect(error?.key == "topics.\(output)", "\(json): \(error.map(String.init(describing:)) ?? "no error")")
        #expect(error?.reason.contains("topics.\(input)") == true, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
        // The two payload topics may be one (a consumer of both platforms' payloads).
        let shared = try #require(try JSONValue(parsing: Array(#"{"topics": {"fcm": "push.all", "apns": "push.all"}}"#.utf8)).objectValue)
        #expect(try PipelineConfiguration.load(file: shared, environment: [:]).topics.fcm == "push.all")
    }
}
