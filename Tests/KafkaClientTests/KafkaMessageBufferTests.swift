import Foundation
import Testing

@testable import KafkaClient

@Suite("The consumer's message buffer: batches handed over whole, and released once taken")
struct KafkaMessageBufferTests {
    private static func batch(_ offsets: Range<Int64>, partition: Int32 = 0, topic: String = "t") -> [KafkaConsumerMessage] {
        offsets.map { offset in
            KafkaConsumerMessage(topic: topic, partition: partition, offset: offset, key: nil, value: Array(repeating: 7, count: 1_024), headers: [], timestamp: nil)
        }
    }

    /// Two partitions' records interleaved in each batch, as a poll returns them.
    private static func mixedBatch(_ offsets: Range<Int64>) -> [KafkaConsumerMessage] {
        offsets.flatMap { batch($0..<$0 + 1, partition: 0) + batch($0..<$0 + 1, partition: 1) }
    }

    @Test("taken batches are no longer held, so consumed messages are freed as soon as the application drops them")
    func takenBatchesAreReleased() async throws {
        let buffer = KafkaConsumer.MessageBuffer(capacity: 10_000)
        for start in stride(from: Int64(0), to: 1_000, by: 100) {
            buffer.push(Self.batch(start..<start + 100))
        }
        #expect(buffer.heldMessageCount == 1_000)
        var offsets: [Int64] = []
        for _ in 0..<4 {
            let batch = try #require(try await buffer.next())
            offsets += batch.map(\.offset)
        }
        #expect(offsets == Array(0..<400))
        #expect(buffer.heldMessageCount == 600)
        for _ in 0..<6 {
            offsets += try #require(try await buffer.next()).map(\.offset)
        }
        #expect(offsets == Array(0..<1_000))
        #expect(buffer.heldMessageCount == 0)
        buffer.finish()
        #expect(try await buffer.next() == nil)
    }

    @Test("the poll thread waits for room only while the buffer is full")
    func roomFollowsWhatIsTaken() async throws {
        let buffer = KafkaConsumer.MessageBuffer(capacity: 150)
        buffer.push(Self.batch(0..<100))
        #expect(buffer.waitForSpace(timeout: 0))
        buffer.push(Self.batch(100..<200))
        #expect(!buffer.waitForSpace(timeout: 0))
        _ = try await buffer.next()
        #expect(buffer.waitForSpace(timeout: 0))
        #expect(buffer.heldMessageCount == 100)
    }

    @Test("a paused partition's buffered and later polled records are held back, not counted against the room, and handed over in order on resume")
    func parkedRecordsComeBackInOrder() async throws {
        let paused = KafkaTopicPartition(topic: "t", partition: 1)
        let buffer = KafkaConsumer.MessageBuffer(capacity: 100)
        buffer.push(Self.mixedBatch(0..<30))
        buffer.push(Self.mixedBatch(30..<50))
        #expect(!buffer.waitForSpace(timeout: 0))
        buffer.park(partitions: [paused])
        #expect(buffer.waitForSpace(timeout: 0), "held-back records leave room for the other partitions")
        #expect(buffer.heldMessageCount == 100)
        // Meanwhile the other partition goes on.
        buffer.push(Self.batch(50..<60))
        var handed: [KafkaConsumerMessage] = []
        for _ in 0..<3 { handed += try #require(try await buffer.next()) }
        #expect(handed.allSatisfy { $0.partition == 0 })
        #expect(handed.map(\.offset) == Array(0..<60))
        // A poll still returns records of the paused partition: held back after the others.
        buffer.hold(Self.batch(50..<55, partition: 1))

        buffer.unpark(partitions: [paused])
        let resumed = try #require(try await buffer.next())
        #expect(resumed.map(\.partition) == Array(repeating: 1, count: 55))
        #expect(resumed.map(\.offset) == Array(0..<55))
        #expect(buffer.heldMessageCount == 0)
    }

    @Test("a paused partition revoked or sought meanwhile loses its held-back records; resuming another changes nothing")
    func parkedRecordsOfARemovedPartitionAreDropped() async throws {
        let buffer = KafkaConsumer.MessageBuffer(capacity: 1_000)
        buffer.push(Self.mixedBatch(0..<10))
        buffer.park(partitions: [KafkaTopicPartition(topic: "t", partition: 0), KafkaTopicPartition(topic: "t", partition: 1)])
        buffer.remove(partitions: [KafkaTopicPartition(topic: "t", partition: 1)])
        #expect(buffer.heldMessageCount == 10)
        buffer.unpark(partitions: [KafkaTopicPartition(topic: "t", partition: 1)])
        #expect(buffer.heldMessageCount == 10)
        buffer.unpark(partitions: [KafkaTopicPartition(topic: "t", partition: 0)])
        let batch = try #require(try await buffer.next())
        #expect(batch.map(\.partition) == Array(repeating: 0, count: 10))
        #expect(batch.map(\.offset) == Array(0..<10))
    }

    @Test("pausing a partition holds back only that topic's records, not another topic's partition of the same number")
    func parkingTellsTopicsApart() async throws {
        let buffer = KafkaConsumer.MessageBuffer(capacity: 1_000)
        buffer.push(Self.batch(0..<5, partition: 0, topic: "a") + Self.batch(0..<5, partition: 0, topic: "b"))
        buffer.park(partitions: [KafkaTopicPartition(topic: "a", partition: 0)])
        // Bounded: were both topics' partition 0 held back, nothing would come.
        let handed = try #require(try await within(.seconds(5)) { try await buffer.next() } ?? nil)
        #expect(handed.map(\.topic) == Array(repeating: "b", count: 5))
        buffer.unpark(partitions: [KafkaTopicPartition(topic: "a", partition: 0)])
        let resumed = try #require(try await buffer.next())
        #expect(resumed.map(\.topic) == Array(repeating: "a", count: 5))
        #expect(resumed.map(\.offset) == Array(0..<5))
    }
}
