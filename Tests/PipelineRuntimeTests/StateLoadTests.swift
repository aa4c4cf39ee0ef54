import Foundation
import KafkaClient
import KafkaWireTestSupport
import Logging
import PipelineCore
import Synchronization
import TestSupport
import Testing

@testable import PipelineRuntime

/// The start-up fold of the state topics waits for each partition's end offset. A topic that transactional
/// producers write ends in a transaction marker, which no consumer is given (written here over the Kafka protocol:
/// the mock cluster writes none).
@Suite("Loading the campaign state at start-up", .timeLimit(.minutes(1)))
struct StateLoadTests {
    @Test("a partition whose end holds nothing readable counts as read; one with a record still to read does not")
    func readsThroughUnreadableEnds() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let topic = configuration.topics.definitions
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            for partition in Int32(0)..<2 {
                for index in 0..<5 {
                    _ = try await producer.send(KafkaProducerRecord(topic: topic, partition: partition, value: Array("record-\(index)".utf8)))
                }
            }
            await producer.close()
            // Partition 0 ends in two markers after its five records.
            try await TransactionMarkers.append(.commit, topic: topic, partition: 0, bootstrapServers: kafka.bootstrapServers)
            try await TransactionMarkers.append(.abort, topic: topic, partition: 0, bootstrapServers: kafka.bootstrapServers)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            #expect(try await consumer.watermarks(topic: topic, partition: 0).high == 7)
            let done = KafkaTopicPartition(topic: topic, partition: 0)
            let waiting = KafkaTopicPartition(topic: topic, partition: 1)
            let load = StateLoad(ranges: [done: 0..<7, waiting: 0..<5])
            // Partition 0 read to its last record; partition 1 only to offset 2 (records 3 and 4 still to come).
            for offset in Int64(0)..<5 { load.read(message(done, offset)) }
            for offset in Int64(0)..<3 { load.read(message(waiting, offset)) }

            let watcher = Task { try await load.readThroughUnreadableEnds(using: consumer, logger: testLogger) }
            try await Task.sleep(for: .seconds(4))
            #expect(!load.isDone, "partition 1 still has records 3 and 4 to read")
            load.read(message(waiting, 3))
            load.read(message(waiting, 4))
            try await watcher.value
            #expect(load.isDone)
            await consumer.close()
        }
    }

    /// Found by a review of the stop while starting, which cancels the fold: the fold's reading loop went on taking
    /// batches while the stream held one (it hands over what it holds before it looks at cancellation), and a fold
    /// that ended then logged `Campaign state loaded` as if it were complete.
    @Test("a cancelled fold ends with the cancellation and does not report the state loaded")
    func cancelledFold() async throws {
        try await withPipelineCluster(partitions: 4) { kafka, configuration in
            let now = EventFactory.rfc3339(Date())
            let definitions = (0..<40_000).map { index -> (key: String, value: [UInt8]) in
                let campaign = "campaign-\(index)"
                let event: JSONObject = [
                    "type": "campaign.defined", "campaignId": .string(campaign), "version": 1, "template": "basic",
                    "content": ["title": "Title", "body": "Body"], "occurredAt": .string(now),
                ]
                return (campaign, JSONValue.object(event).encoded())
            }
            try await produce(definitions, to: configuration.topics.definitions, kafka: kafka)
            let recorder = LogRecorder()
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: recorder.logger(level: .info))
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil, role: .state), logger: testLogger)
            let followers = StateFollowers(
                definitions: StateTopicFollower(consumer: consumer, topic: configuration.topics.definitions, partitionCount: 4),
                timers: nil
            )
            let fold = Task { try await pipeline.foldState(from: consumer, partitions: (definitions: 4, timers: 0), followers: followers) }
            // Cancelled as soon as the first definitions are folded, from a thread of its own: a task polling on the
            // cooperative pool, busy with the other tests, saw the first only once the fold had read all of them.
            let sawTheFirst = Thread {
                let deadline = Date().addingTimeInterval(50)
                while pipeline.campaigns.withLock({ $0.count }) == 0, Date() < deadline { usleep(1_000) }
                fold.cancel()
            }
            sawTheFirst.start()
            await #expect(throws: CancellationError.self) { try await fold.value }
            // Stopped at the next batch, far from the topic's end (without the check, the fold read all of it).
            let folded = pipeline.campaigns.withLock { $0.count }
            #expect(folded < definitions.count, "the fold stopped before the end of the topic, not after \(folded) definitions")
            #expect(!recorder.lines.contains { $0.message == "Campaign state loaded" })
            await consumer.close()
        }
    }

    private func message(_ partition: KafkaTopicPartition, _ offset: Int64) -> KafkaConsumerMessage {
        KafkaConsumerMessage(topic: partition.topic, partition: partition.partition, offset: offset, key: nil, value: [], headers: [], timestamp: nil)
    }
}
