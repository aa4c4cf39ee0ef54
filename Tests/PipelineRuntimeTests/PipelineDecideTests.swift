import Foundation
import KafkaClient
import PipelineCore
import Synchronization
@testable import PipelineRuntime
import Testing

/// `decide` on one send of a campaign defined by reference, with the state topics folded by the test (nothing folds
/// them by itself here), so that what the campaign table holds while a batch is decided is under the test's control.
private struct DecideBench {
    let pipeline: CampaignPipeline
    let consumer: KafkaConsumer
    let stateConsumer: KafkaConsumer
    let producer: KafkaProducer
    let followers: StateFollowers
    let sender: OutputSender
    let send: KafkaConsumerMessage
    let definition: [UInt8]

    /// - Parameter expiresAt: the send's, if any.
    init(kafka: EmbeddedKafka, configuration: PipelineConfiguration, expiresAt: Timestamp? = nil) async throws {
        let topics = configuration.topics
        definition = JSONValue.object([
            "type": "campaign.defined", "campaignId": "by-reference", "version": 1, "template": "basic",
            "occurredAt": .string(Timestamp(Date().addingTimeInterval(-3_600)).rfc3339), "content": ["title": "Hello", "body": "World"],
        ]).encoded()
        // On the topic (offset 0), so that a catch-up waits for it to be folded.
        try await produce([("by-reference", definition)], to: topics.definitions, kafka: kafka)
        pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
        stateConsumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
        followers = StateFollowers(
            definitions: StateTopicFollower(consumer: stateConsumer, topic: topics.definitions, partitionCount: 1, timeout: .seconds(600)),
            timers: StateTopicFollower(consumer: stateConsumer, topic: topics.timers, partitionCount: 1)
        )
        consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
        try consumer.assign([KafkaTopicPartitionOffset(topic: topics.sends, partition: 0, offset: KafkaOffset.end)])
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
        sender = OutputSender(producer: producer, statistics: pipeline.statistics, backoff: .milliseconds(100), maxBackoff: .seconds(1), logger: testLogger)
        var event = try EventFactory().event("basic-fcm", id: "by-reference-send", recipient: "user-R").setting(["campaignId"], to: "by-reference")
        event["content"] = nil
        if let expiresAt { event["expiresAt"] = .string(expiresAt.rfc3339) }
        send = KafkaConsumerMessage(
            topic: topics.sends,
            partition: 0,
            offset: 0,
            key: Array("user-R".utf8),
            value: JSONValue.object(event).encoded(),
            headers: [],
            timestamp: Date(),
            assignmentGeneration: consumer.assignmentGeneration(of: KafkaTopicPartition(topic: topics.sends, partition: 0))
        )
    }

    /// Decides the send, running `meanwhile` once the decision waits for the definitions topic, then folds the
    /// definition; the send's decision.
    func decide(meanwhile: @Sendable () async throws -> Void = {}) async throws -> EventProcessor.Decision? {
        let deciding = Task { [pipeline, consumer, sender, followers, send] in
            await pipeline.decide([send], consumer: consumer, decisionsSender: sender, followers: followers)
        }
        // Nothing folds the definition: the decision waits for it (a catch-up) however long this takes.
        try await Task.sleep(for: .milliseconds(500))
        try await meanwhile()
        try pipeline.campaigns.withLock { table throws(PipelineError) in try table.apply(json: definition, partition: 0, offset: 0) }
        followers.definitions.folded(partition: 0, offset: 0)
        return await deciding.value?.decisions.first ?? nil
    }

    func close() async {
        await consumer.close()
        await stateConsumer.close()
        await producer.close()
    }
}

@Suite("Deciding a batch against the campaign table its records were first judged with", .timeLimit(.minutes(2)))
struct PipelineDecideTests {
    /// A send naming a definition the table lacked waits for the table to read the definitions topic, and is decided
    /// with the table that then holds it: that table's horizon is the one recorded, or the send, read again, would be
    /// judged without the definition it was delivered with (and rejected).
    @Test("a send decided once the table caught up with its definition records the horizon it was decided with")
    func awaitedDefinitionRecordsTheNewerHorizon() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let bench = try await DecideBench(kafka: kafka, configuration: configuration)
            let decision = try await bench.decide()
            guard case .deliver? = decision else { Issue.record("not delivered: \(String(describing: decision))"); return }
            #expect(bench.pipeline.decisionTimes.ranges(of: 0).map(\.horizon) == [CampaignTable.Horizon([0: 1])])
            await bench.close()
        }
    }

    /// A send judged before (another instance's record) against a table that had read the definition is judged again
    /// only once this instance's table has read as far: judged with less, it would not find the definition.
    @Test("a send judged before against a table that had read further waits for this one to read as far")
    func judgedBeforeWaitsForTheTable() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let bench = try await DecideBench(kafka: kafka, configuration: configuration)
            let instant = Timestamp(Date().addingTimeInterval(-60))
            bench.pipeline.decisionTimes.merge([.init(first: 0, last: 0, decidedAt: instant, horizon: CampaignTable.Horizon([0: 1]))], of: 0)
            let decision = try await bench.decide()
            guard case .deliver? = decision else { Issue.record("not delivered: \(String(describing: decision))"); return }
            #expect(bench.pipeline.decisionTimes.ranges(of: 0) == [.init(first: 0, last: 0, decidedAt: instant, horizon: CampaignTable.Horizon([0: 1]))])
            await bench.close()
        }
    }

    /// Another instance's record for the send, folded while this one decided it (a late record of that instance's
    /// earlier reading), is the judgement on the topic: the send is decided as recorded there, so that a reading after
    /// a crash decides it the same way.
    @Test("a send whose judgement another instance recorded while it was decided is decided as recorded")
    func judgementRecordedMeanwhile() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let bench = try await DecideBench(kafka: kafka, configuration: configuration)
            let recorded = DecisionTimes.Range(first: 0, last: 0, decidedAt: Timestamp(Date().addingTimeInterval(-60)), horizon: CampaignTable.Horizon([0: 0]))
            let decision = try await bench.decide { [pipeline = bench.pipeline] in pipeline.decisionTimes.merge([recorded], of: 0) }
            // Recorded against a table that had not read the definition: the send is not rendered.
            guard case .awaitingDefinition? = decision else { Issue.record("not as recorded: \(String(describing: decision))"); return }
            #expect(bench.pipeline.decisionTimes.ranges(of: 0) == [recorded])
            await bench.close()
        }
    }

    /// Found by review: a send decided again as another instance recorded it is judged at that record's instant, but
    /// its sinks were not told: an FCM or APNs sink judged its `expiresAt` by the wall clock alone, and could expire a
    /// send that other instance had delivered.
    @Test("a send decided as another instance recorded it tells its sinks how much earlier it was judged")
    func judgementRecordedMeanwhileReachesTheSinks() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let bench = try await DecideBench(kafka: kafka, configuration: configuration, expiresAt: Timestamp(Date().addingTimeInterval(600)))
            let recorded = DecisionTimes.Range(first: 0, last: 0, decidedAt: Timestamp(Date().addingTimeInterval(-60)), horizon: CampaignTable.Horizon([0: 1]))
            let decision = try await bench.decide { [pipeline = bench.pipeline] in pipeline.decisionTimes.merge([recorded], of: 0) }
            guard case .deliver(let notification, _)? = decision else { Issue.record("not delivered: \(String(describing: decision))"); return }
            #expect(notification.judgedEarlierBy >= .seconds(60), "\(notification.judgedEarlierBy)")
            #expect(notification.judgedEarlierBy < .seconds(120), "\(notification.judgedEarlierBy)")
            #expect(bench.pipeline.decisionTimes.ranges(of: 0) == [recorded])
            await bench.close()
        }
    }

    /// Found by review: decided again as another instance recorded it, the send was judged with this instance's
    /// table, which may not have read as far as that record's: a cancellation between the two was left out, and
    /// the send delivered here would be suppressed by a reader that had read it.
    @Test("a send decided as another instance recorded it meanwhile waits for the table to read as far as that record's")
    func recordedMeanwhileWithMoreOfTheTable() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let bench = try await DecideBench(kafka: kafka, configuration: configuration)
            let cancellation = JSONValue.object([
                "type": "campaign.cancelled", "campaignId": "by-reference",
                "occurredAt": .string(Timestamp(Date().addingTimeInterval(-1_800)).rfc3339),
            ]).encoded()
            // Recorded against a table that had read the cancellation (offset 1), written while this one decided.
            let recorded = DecisionTimes.Range(first: 0, last: 0, decidedAt: Timestamp(Date().addingTimeInterval(-60)), horizon: CampaignTable.Horizon([0: 2]))
            let decision = try await bench.decide { [pipeline = bench.pipeline, follower = bench.followers.definitions] in
                // The cancellation is on the topic before the record naming it: the other instance read it first. (The
                // other way round, a decision that started late could catch up to the topic's end before the
                // cancellation was written, and judge with less, as it must when the end is all there is.)
                try await produce([("by-reference", cancellation)], to: configuration.topics.definitions, kafka: kafka)
                pipeline.decisionTimes.merge([recorded], of: 0)
                // This table reads the cancellation only later.
                Task {
                    try await Task.sleep(for: .seconds(1))
                    try pipeline.campaigns.withLock { table throws(PipelineError) in try table.apply(json: cancellation, partition: 0, offset: 1) }
                    follower.folded(partition: 0, offset: 1)
                }
            }
            guard case .suppressed? = decision else { Issue.record("not as recorded: \(String(describing: decision))"); return }
            await bench.close()
        }
    }
}
