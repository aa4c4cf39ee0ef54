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
}
