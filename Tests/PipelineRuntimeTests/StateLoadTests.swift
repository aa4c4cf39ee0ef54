import Foundation
import KafkaClient
import KafkaWireTestSupport
import PipelineCore
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

    private func message(_ partition: KafkaTopicPartition, _ offset: Int64) -> KafkaConsumerMessage {
        KafkaConsumerMessage(topic: partition.topic, partition: partition.partition, offset: offset, key: nil, value: [], headers: [], timestamp: nil)
    }
}
