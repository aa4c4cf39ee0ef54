import PipelineCore
import PipelineRuntime
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
