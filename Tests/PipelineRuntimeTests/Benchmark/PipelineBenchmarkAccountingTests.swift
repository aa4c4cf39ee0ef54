import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import TestSupport
import Testing

/// The bench's runs pass only when every event is accounted for; these show that they fail otherwise.
@Suite("Benchmark accounting", .timeLimit(.minutes(2)))
struct PipelineBenchmarkAccountingTests {
    @Test("a pipeline run where an event has two terminal outcomes is not accounted")
    func duplicateOutcomeIsNotAccounted() async throws {
        let kafka = try EmbeddedKafka(brokers: 1, logger: testLogger)
        defer { kafka.shutdown() }
        let analyticsTopic = PipelineConfiguration.Topics().prefixingOutputs(with: "pipeline.").analytics
        let cluster = BenchmarkCluster(bootstrapServers: kafka.bootstrapServers) { name, partitions in
            try? kafka.createTopic(name, partitions: partitions)
        }
        try kafka.createTopic(analyticsTopic, partitions: 64)
        // A second terminal outcome of bench-0, as an output written twice would leave it.
        let messageId = MessageID.make(eventId: "bench-0", platform: .fcm)
        let duplicate = #"{"specVersion":"1","type":"push.delivered","messageId":"\#(messageId)","sourceEventId":"bench-0","platform":"fcm","sink":"kafka:push.fcm","occurredAt":"2026-11-20T10:00:00Z"}"#
        try await produce([(messageId, Array(duplicate.utf8))], to: analyticsTopic, kafka: kafka)

        let result = try await benchmark(on: cluster).pipeline()
        #expect(!result.isAccounted, "\(result.accounting)")
        #expect(result.accounting.contains("1 repeated"), "\(result.accounting)")
    }

    /// The relay's payload topic takes nothing: every payload fails once `message.timeout.ms` (30 s) passes.
    @Test("a relay run whose payloads were never written is not accounted")
    func failedRelayRecordsAreNotAccounted() async throws {
        let kafka = try EmbeddedKafka(brokers: 1, logger: testLogger)
        defer { kafka.shutdown() }
        let payloadTopic = PipelineConfiguration.Topics().prefixingOutputs(with: "relay.").fcm
        let cluster = BenchmarkCluster(bootstrapServers: kafka.bootstrapServers) { name, partitions in
            try? kafka.createTopic(name, partitions: partitions)
            if name == payloadTopic {
                for partition in 0..<partitions { try? kafka.setLeader(of: name, partition: partition, to: nil) }
            }
        }
        let result = try await benchmark(on: cluster).relay()
        #expect(!result.isAccounted, "\(result.accounting)")
        #expect(result.accounting.contains("100 records failed"), "\(result.accounting)")
    }

    /// A benchmark of 100 basic FCM events on one partition of `cluster`.
    private func benchmark(on cluster: BenchmarkCluster) throws -> PipelineBenchmark {
        let events = BenchmarkEvents(samples: [try #require(Fixtures.sample("basic-fcm").objectValue)], count: 100)
        return PipelineBenchmark(cluster: cluster, events: events, partitions: 1, registry: builtinRegistry, logger: testLogger) { _, _, _ in }
    }
}
