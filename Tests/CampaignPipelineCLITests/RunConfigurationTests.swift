import ArgumentParser
@testable import CampaignPipelineCLI
import Foundation
import KafkaClient
import PipelineRuntime
import Testing

@Suite("run: the configuration's layers")
struct RunConfigurationTests {
    /// A later source wins whatever section the earlier one used: the file's consumer properties used to beat
    /// `--kafka-property`.
    @Test("--kafka-property wins over the same property in the file's consumerProperties")
    func flagWinsOverFileConsumerProperties() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("run-layers-\(UUID().uuidString).json")
        try Data(#"{"kafka": {"consumerProperties": {"session.timeout.ms": "abc"}}}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let command = try RunCommand.parse([
            "--bootstrap-servers", "localhost:9092", "--config", file.path, "--kafka-property", "session.timeout.ms=12000",
        ])
        let configuration = try command.effectiveConfiguration(environment: [:])
        let properties = configuration.consumerConfiguration(groupID: "g").librdkafkaProperties
        #expect(properties.last { $0.key == "session.timeout.ms" }?.value == "12000")
    }
}
