import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

@Suite("Outputs the cluster does not take are sent again", .timeLimit(.minutes(2)))
struct PipelineOutputRetryTests {
    @Test("outputs to partitions without a leader for longer than message.timeout.ms are sent again until taken: nothing lost, nothing twice")
    func outputsAreSentAgain() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let factory = try EventFactory()
            let count = 60
            let inputs = (0..<count).map { index -> (key: String, value: [UInt8]) in
                let kind = EventFactory.kinds[index % EventFactory.kinds.count]
                return ("user-\(index)", JSONValue.object(factory.event(kind, id: "retried-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
            // The payload and analytics topics lose their leader: every output waits, times out, and is sent again.
            let outputTopics = [configuration.topics.fcm, configuration.topics.apns, configuration.topics.analytics]
            for topic in outputTopics {
                for partition in 0..<Int32(2) { try kafka.setLeader(of: topic, partition: partition, to: nil) }
            }
            var retrying = configuration
            retrying.messageTimeout = .seconds(1)
            retrying.retryBackoff = .milliseconds(200)
            retrying.maxRetryBackoff = .milliseconds(500)
            retrying.untilIdle = nil
            let pipeline = CampaignPipeline(configuration: retrying, registry: builtinRegistry, logger: testLogger)
            try await whileRunning(pipeline) {
                // Every event read and its payload refused at least once (each attempt times out after a second).
                try await eventually("outputs sent again", timeout: clusterTimeout) {
                    let snapshot = pipeline.statistics.snapshot
                    return snapshot.totalIn == count && snapshot.outputsRetried >= count ? true : nil
                }
                #expect(pipeline.statistics.outcomeCount == 0, "no outcome while nothing can be written")
                for topic in outputTopics {
                    for partition in 0..<Int32(2) { try kafka.setLeader(of: topic, partition: partition, to: 1) }
                }
                try await eventually("every outcome written", timeout: .seconds(60)) {
                    pipeline.statistics.outcomeCount == count ? true : nil
                }
            }

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka)).filter(\.isTerminal)
            let byEvent = Dictionary(grouping: outcomes, by: { $0.identity.eventId ?? "" })
            #expect(byEvent.count == count, "every event has an outcome")
            #expect(byEvent.values.allSatisfy { $0.count == 1 }, "exactly one each")
            #expect(outcomes.allSatisfy { $0.kind == .delivered })
            // The payloads sent again are the payloads: one per delivered message id, with the contract's headers.
            let payloads = try await readAll(configuration.topics.fcm, kafka: kafka) + (try await readAll(configuration.topics.apns, kafka: kafka))
            let payloadIds = payloads.compactMap { record in record.headers.first { $0.key == "messageId" }?.stringValue }
            #expect(Set(payloadIds) == Set(outcomes.map(\.identity.messageId)))
            #expect(payloadIds.count == count)
            #expect(payloads.allSatisfy { record in record.headers.contains { $0.key == "template" } })
            // All of it committed: a second run has nothing left to do.
            let again = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            #expect(again.statistics.snapshot.totalIn == 0)
        }
    }
}
