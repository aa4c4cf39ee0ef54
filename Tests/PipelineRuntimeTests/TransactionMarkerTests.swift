import Foundation
import KafkaClient
import KafkaWireTestSupport
import Logging
import PipelineCore
import PipelineRuntime
import Testing
import TestSupport

/// Topics written by transactional producers end in transaction markers, offsets no consumer is given. The mock
/// cluster writes none, so these tests write them over the Kafka protocol (``TransactionMarkers``).
@Suite("Topics that end in transaction markers", .timeLimit(.minutes(3)))
struct TransactionMarkerTests {
    /// Every topic the pipeline reads ends in markers: the state topics folded at start-up (the timers topic holds
    /// nothing but markers), the definitions topic a send of an unknown campaign makes the table catch up with, and
    /// the sends topic `--until-idle` waits to have read to its end.
    @Test("run --until-idle over topics with markers starts, processes every send, commits past them and stops by itself")
    func untilIdleThroughMarkers() async throws {
        try await withPipelineCluster(partitions: 3) { kafka, configuration in
            let factory = try EventFactory()
            let topics = configuration.topics
            let defined: JSONObject = [
                "type": "campaign.defined", "campaignId": "spring", "version": 1, "template": "basic",
                "content": ["title": "Spring", "body": "Sale"], "occurredAt": .string(EventFactory.rfc3339(Date().addingTimeInterval(-60))),
            ]
            try await produce([("spring", JSONValue.object(defined).encoded())], to: topics.definitions, kafka: kafka)

            var sends: [(key: String, value: [UInt8])] = (0..<60).map { index in
                let recipient = "user-\(index)"
                let event = factory.event(EventFactory.kinds[index % EventFactory.kinds.count], id: "event-\(index)", recipient: recipient)
                return (recipient, JSONValue.object(event).encoded())
            }
            var byReference = factory.event("basic-fcm", id: "by-reference", recipient: "user-ref").setting(["campaignId"], to: "spring")
            byReference["content"] = nil
            var unknown = factory.event("basic-fcm", id: "unknown-campaign", recipient: "user-ghost").setting(["campaignId"], to: "ghost")
            unknown["content"] = nil
            sends.append(("user-ref", JSONValue.object(byReference).encoded()))
            sends.append(("user-ghost", JSONValue.object(unknown).encoded()))
            // Markers between the sends too: the offsets of a partition's records are not consecutive.
            try await produce(Array(sends[..<31]), to: topics.sends, kafka: kafka)
            for partition in Int32(0)..<3 {
                try await TransactionMarkers.append(.commit, topic: topics.sends, partition: partition, bootstrapServers: kafka.bootstrapServers)
            }
            try await produce(Array(sends[31...]), to: topics.sends, kafka: kafka)

            for topic in [topics.sends, topics.definitions, topics.timers] {
                for partition in Int32(0)..<3 {
                    try await TransactionMarkers.append(.commit, topic: topic, partition: partition, bootstrapServers: kafka.bootstrapServers)
                }
            }

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(pipeline, timeout: .seconds(90))

            // Committed past every record (the final marker, at the high watermark's offset before, may be left):
            // a restart has nothing to read again.
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: configuration.groupID), logger: testLogger)
            let committed = try await consumer.committed((0..<3).map { KafkaTopicPartition(topic: topics.sends, partition: $0) })
            for position in committed {
                let high = try await consumer.watermarks(topic: topics.sends, partition: position.partition).high
                #expect(position.offset >= high - 1, "partition \(position.partition): committed \(position.offset), high watermark \(high)")
            }
            await consumer.close()
            // Progress lines every 200 ms, with the lag: the markers at the partitions' ends may stay as lag (one each,
            // as kafka-consumer-groups counts it), which is no work to show every interval (found by review).
            var idleConfiguration = configuration
            idleConfiguration.progressLogInterval = .milliseconds(200)
            let logs = LogRecorder()
            let again = CampaignPipeline(configuration: idleConfiguration, registry: builtinRegistry, logger: logs.logger(level: .info))
            try await runUntilIdle(again, timeout: .seconds(90))
            #expect(again.statistics.snapshot.totalIn == 0, "nothing read again")
            let progressLines = logs.lines.filter { $0.message == "Progress" }
            #expect(progressLines.count <= 2, "\(progressLines.map { $0.metadata["lag"] ?? "-" })")
            #expect(progressLines.allSatisfy { (Int($0.metadata["lag"]?.description ?? "") ?? 99) <= 3 }, "\(progressLines.map(\.metadata))")

            let outcomes = try await analyticsRecords(configuration, kafka: kafka).map(\.event)
            let byEvent = Dictionary(grouping: outcomes) { $0.identity.eventId ?? "" }
            #expect(byEvent.count == sends.count, "one outcome per send: \(byEvent.count) of \(sends.count)")
            #expect((0..<60).allSatisfy { byEvent["event-\($0)"]?.first?.kind == .delivered })
            #expect(byEvent["by-reference"]?.first?.kind == .delivered, "the definition was folded at start-up")
            let rejected = try #require(byEvent["unknown-campaign"]?.first)
            #expect(rejected.kind == .rejected, "\(rejected.kind)")
            #expect(rejected.reasonDetail?.contains("ghost") == true, "\(rejected.reasonDetail ?? "")")
        }
    }
}
