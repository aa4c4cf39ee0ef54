import Foundation
import Testing

@testable import KafkaClient

@Suite("The consumer's message buffer: batches handed over whole, and released once taken")
struct KafkaMessageBufferTests {
    private static func batch(_ offsets: Range<Int64>) -> [KafkaConsumerMessage] {
        offsets.map { offset in
            KafkaConsumerMessage(topic: "t", partition: 0, offset: offset, key: nil, value: Array(repeating: 7, count: 1_024), headers: [], timestamp: nil)
        }
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
}
