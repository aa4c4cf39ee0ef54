import Foundation
import KafkaClient
import KafkaWireTestSupport
import Logging
import PipelineCore
import Testing
import TestSupport

@testable import PipelineRuntime

@Suite("Sends that name a campaign defined an instant before them")
struct StateTopicFollowerTests {
    /// The campaign table is folded by a consumer of its own, which can be behind the sends (here working through a
    /// burst of 100,000 other definitions). A send by reference whose definition it has not read yet waits for it
    /// to read the topic to its end, instead of being rejected for good and dead-lettered.
    @Test("a send produced after its campaign's definition renders it, however far behind the table is")
    func sendAfterItsDefinition() async throws {
        try await withPipelineCluster(partitions: 3) { kafka, configuration in
            let factory = try EventFactory()
            var running = configuration
            running.untilIdle = nil
            let pipeline = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let records = try await whileRunning(pipeline) {
                // The group is joined and sends flow.
                let warm = factory.event("basic-fcm", id: "warm-up", recipient: "user-warm")
                try await produce([("user-warm", JSONValue.object(warm).encoded())], to: configuration.topics.sends, kafka: kafka)
                _ = try await eventually("the warm-up outcome", timeout: clusterTimeout) {
                    try await analyticsRecords(configuration, kafka: kafka).first { $0.event.identity.eventId == "warm-up" }
                }
                let definedAt = EventFactory.rfc3339(Date().addingTimeInterval(-1))
                var definitions: [(key: String, value: [UInt8])] = (0..<100_000).map { index in
                    let filler: JSONObject = [
                        "type": "campaign.defined", "campaignId": .string("filler-\(index % 1_000)"), "version": .int(index / 1_000 + 1),
                        "template": "basic", "content": ["title": "t", "body": "b"], "occurredAt": .string(definedAt),
                    ]
                    return ("busy", JSONValue.object(filler).encoded())
                }
                let defined: JSONObject = [
                    "type": "campaign.defined", "campaignId": "fresh", "version": 1, "template": "basic",
                    "content": ["title": "Fresh", "body": "Just defined"], "occurredAt": .string(definedAt),
                ]
                definitions.append(("busy", JSONValue.object(defined).encoded()))
                try await produce(definitions, to: configuration.topics.definitions, kafka: kafka)

                // Produced once the definition is acknowledged.
                var send = factory.event("basic-fcm", id: "after-define", recipient: "user-fresh").setting(["campaignId"], to: "fresh")
                send["content"] = nil
                try await produce([("user-fresh", JSONValue.object(send).encoded())], to: configuration.topics.sends, kafka: kafka)
                return try await eventually("the send's outcome", timeout: clusterTimeout) {
                    try await analyticsRecords(configuration, kafka: kafka).first { $0.event.identity.eventId == "after-define" }
                }
            }
            #expect(records.event.kind == .delivered, "\(records.event.kind): \(records.event.reasonDetail ?? "")")
        }
    }

    /// Sends of a campaign nobody defined must not each wait: once the table has read the topic to its end after a
    /// send was written, waiting again cannot help it.
    @Test("a catch-up counts for the sends written before it began")
    func catchUpCountsForEarlierSends() async throws {
        try await withPipelineCluster(partitions: 3) { kafka, configuration in
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let follower = StateTopicFollower(consumer: consumer, topic: configuration.topics.definitions, partitionCount: 3)
            let written = Date().addingTimeInterval(-10)
            #expect(!follower.hasCaughtUp(since: written), "no catch-up yet")
            #expect(await follower.catchUp(logger: testLogger) == .reachedEnd)
            #expect(follower.hasCaughtUp(since: written))
            #expect(!follower.hasCaughtUp(since: Date()), "a send written now may name a definition the catch-up did not see")
            #expect(!follower.hasCaughtUp(since: nil), "a send of unknown time waits")
            await consumer.close()
        }
    }

    /// Found by an operator's review: with the brokers gone, a pipeline asked to stop sat in a catch-up's look-ups
    /// (librdkafka's watermark query, which waited minutes past its timeout), and the shutdown watchdog ended the
    /// process before the drain. A cancelled catch-up now ends at once, quietly (stopping is not a failure to report);
    /// one not cancelled gives up at its timeout, with its warning.
    @Test("a catch-up while the brokers are gone ends at once when cancelled, and at its timeout otherwise", .timeLimit(.minutes(2)))
    func catchUpWithTheBrokersGone() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let recorder = LogRecorder()
            let logger = recorder.logger(level: .warning)
            let patient = StateTopicFollower(consumer: consumer, topic: configuration.topics.definitions, partitionCount: 2, timeout: .seconds(600))
            #expect(await patient.catchUp(logger: logger) == .reachedEnd)
            kafka.shutdown()

            let stopping = Task { await patient.catchUp(logger: logger) }
            try await Task.sleep(for: .milliseconds(200))
            stopping.cancel()
            #expect(await stopping.value == .cancelled)
            #expect(recorder.lines.isEmpty, "nothing to report when stopping: \(recorder.lines.map(\.message))")

            let brief = StateTopicFollower(consumer: consumer, topic: configuration.topics.definitions, partitionCount: 2, timeout: .seconds(2))
            #expect(await brief.catchUp(logger: logger) == .gaveUp)
            #expect(recorder.lines.contains { $0.message.contains("end offsets") }, "\(recorder.lines.map(\.message))")
            await consumer.close()
        }
    }

    /// A definitions topic that transactional producers write ends in a transaction marker, which the folding
    /// consumer is never given: the catch-up must find that nothing readable is left rather than wait it out (10 s per
    /// send naming an unknown campaign) and give up.
    @Test("a catch-up reads through transaction markers at the end of the topic")
    func catchUpThroughMarkers() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let topic = configuration.topics.definitions
            let defined = #"{"type":"campaign.defined","campaignId":"c","version":1,"content":{"title":"t","body":"b"},"occurredAt":"2026-11-20T10:00:00Z"}"#
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            _ = try await producer.send(KafkaProducerRecord(topic: topic, partition: 0, value: Array(defined.utf8)))
            await producer.close()
            // Partition 0: the definition, then a commit marker; partition 1: an abort marker alone.
            try await TransactionMarkers.append(.commit, topic: topic, partition: 0, bootstrapServers: kafka.bootstrapServers)
            try await TransactionMarkers.append(.abort, topic: topic, partition: 1, bootstrapServers: kafka.bootstrapServers)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let follower = StateTopicFollower(consumer: consumer, topic: topic, partitionCount: 2, timeout: .seconds(30))
            follower.folded(partition: 0, offset: 0)  // what the state consumer reads
            let started = ContinuousClock.now
            #expect(await follower.catchUp(logger: testLogger) == .reachedEnd)
            #expect(ContinuousClock.now - started < .seconds(20), "read through, not waited out: \(ContinuousClock.now - started)")
            #expect(follower.hasCaughtUp(since: Date().addingTimeInterval(-60)))
            await consumer.close()
        }
    }

    /// Writes one record to each of `partitions` of `topic`.
    private func writeRecord(to topic: String, partitions: [Int32], kafka: EmbeddedKafka) async throws {
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
        for partition in partitions {
            _ = try await producer.send(KafkaProducerRecord(topic: topic, partition: partition, key: Array("k".utf8), value: Array("{}".utf8)))
        }
        await producer.close()
    }

    /// A new reading of a sends partition waits only for its own timers partition, not for the others.
    @Test("a catch-up of some partitions waits for those only, and does not count as the whole topic's")
    func catchUpOfSomePartitions() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let topic = configuration.topics.timers
            try await writeRecord(to: topic, partitions: [0, 1], kafka: kafka)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let follower = StateTopicFollower(consumer: consumer, topic: topic, partitionCount: 2, timeout: .seconds(2))
            follower.folded(partition: 1, offset: 0)  // partition 0 is not read
            #expect(await follower.catchUp(partitions: [1], logger: testLogger) == .reachedEnd)
            #expect(!follower.hasCaughtUp(since: Date().addingTimeInterval(-60)), "only the whole topic's catch-up counts for sends")
            #expect(await follower.catchUp(partitions: [0, 1], logger: testLogger) == .gaveUp)
            await consumer.close()
        }
    }

    /// A new reading of several partitions at once (every partition after an eager rebalance) used to give up for all
    /// of them when the broker could not tell one partition's end.
    @Test("a catch-up of some partitions reaches the end of those whose end the broker tells, when it cannot tell one's")
    func catchUpWithOnePartitionLeaderless() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let topic = configuration.topics.timers
            try await writeRecord(to: topic, partitions: [1], kafka: kafka)
            try kafka.setLeader(of: topic, partition: 0, to: nil)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let follower = StateTopicFollower(consumer: consumer, topic: topic, partitionCount: 2, timeout: .seconds(2))
            follower.folded(partition: 1, offset: 0)
            let (outcome, reached) = await follower.catchUpEach(partitions: [0, 1], logger: testLogger)
            #expect(outcome == .gaveUp)
            #expect(reached == [1])
            await consumer.close()
        }
    }

    /// A pipeline stopping during a catch-up learns nothing from it: the sends waiting must not be rejected as if the
    /// table had read everything (they are left for the next run).
    @Test("a catch-up cancelled before the table read the topic says so")
    func cancelledCatchUp() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let defined = #"{"type":"campaign.defined","campaignId":"c","version":1,"content":{"title":"t","body":"b"},"occurredAt":"2026-11-20T10:00:00Z"}"#
            try await produce([("c", Array(defined.utf8))], to: configuration.topics.definitions, kafka: kafka)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            // Nothing folds the topic here: the catch-up waits until cancelled.
            let follower = StateTopicFollower(consumer: consumer, topic: configuration.topics.definitions, partitionCount: 1)
            let waiting = Task { await follower.catchUp(logger: testLogger) }
            try await Task.sleep(for: .seconds(1))
            waiting.cancel()
            #expect(await waiting.value == .cancelled)
            #expect(!follower.hasCaughtUp(since: Date().addingTimeInterval(-60)))
            await consumer.close()
        }
    }
}
