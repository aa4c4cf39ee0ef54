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
