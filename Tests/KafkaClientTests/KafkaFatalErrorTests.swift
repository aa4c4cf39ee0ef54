import Foundation
@testable import KafkaClient
import Synchronization
import Testing

/// Fatal errors (a fenced static member, a failed idempotent producer), raised as librdkafka's own test hook
/// raises them, and the look-ups and waits around them.
@Suite("Fatal errors and per-partition failures are reported as what they are")
struct KafkaFatalErrorTests {
    /// Holds the last reference to a client, so that a thread of its own can release it.
    final class LastReference: Sendable {
        let consumer: Mutex<KafkaConsumer?>
        let isReleased = Mutex(false)
        init(_ consumer: KafkaConsumer) { self.consumer = Mutex(consumer) }
    }

    @Test("a consumer that hit a fatal error ends its messages with it, closes, and is destroyed when released")
    func consumerWithFatalErrorIsReleased() async throws {
        try await withEmbeddedKafka(topics: ["fenced": 1]) { kafka in
            try await produceNumbered(10, to: "fenced", kafka: kafka)
            let reference = try await Self.fencedConsumer(kafka)
            // Released on a thread of its own: before the fix, librdkafka's destroy waited for ever for a group close
            // the fatal error forbids (its main thread spinning), and held the releasing thread with it.
            let releaser = Thread {
                reference.consumer.withLock { $0 = nil }
                reference.isReleased.withLock { $0 = true }
            }
            releaser.start()
            let deadline = ContinuousClock.now + .seconds(30)
            while !reference.isReleased.withLock({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(reference.isReleased.withLock { $0 }, "the consumer's destruction returned")
        }
    }

    /// A consumer of `fenced` that read the topic and then hit a fatal error; the caller holds its only reference.
    private static func fencedConsumer(_ kafka: EmbeddedKafka) async throws -> LastReference {
        let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
        try consumer.subscribe(topics: ["fenced"])
        #expect(try await collect(10, from: consumer).count == 10)
        #expect(consumer.simulateFatalError())
        let ending = try await within(.seconds(20)) { () -> KafkaError? in
            do {
                for try await _ in consumer.messages {}
                return nil
            } catch let error as KafkaError {
                return error
            }
        }
        let error = try #require(ending ?? nil, "the messages end with the fatal error")
        #expect(error.code == .fatal)
        #expect(error.librdkafkaName == "FENCED_INSTANCE_ID")
        await consumer.close()
        return LastReference(consumer)
    }

    @Test("a committed-position look-up that fails for one partition names it instead of reporting nothing committed")
    func committedReportsFailedPartitions() async throws {
        try await withEmbeddedKafka(topics: ["known": 1]) { kafka in
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
            let known = KafkaTopicPartition(topic: "known", partition: 0)
            let nothing = try await consumer.committed([known])
            #expect(nothing.map(\.offset) == [KafkaOffset.invalid], "nothing committed yet, and no error")

            let error = await #expect(throws: KafkaError.self) {
                try await consumer.committed([known, KafkaTopicPartition(topic: "absent", partition: 0)])
            }
            #expect(error?.code == .offsetLookupFailed)
            #expect(error?.topic == "absent")
            #expect(error?.partition == 0)
            #expect(error?.librdkafkaName == "UNKNOWN_TOPIC_OR_PART")
            await consumer.close()
        }
    }

    @Test("records a producer held when it failed for good are reported with that failure, and later ones refused")
    func producerFatalErrorIsReportedAsFatal() async throws {
        try await withEmbeddedKafka(topics: ["stuck": 1]) { kafka in
            // No leader: the records stay queued in the producer.
            try kafka.setLeader(of: "stuck", partition: 0, to: nil)
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let reports = Mutex<[Result<KafkaDeliveryReport, KafkaError>]>([])
            for index in 0..<3 {
                try producer.produce(KafkaProducerRecord(topic: "stuck", partition: 0, value: Array("record \(index)".utf8))) { result in
                    reports.withLock { $0.append(result) }
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(producer.simulateFatalError())
            let deadline = ContinuousClock.now + .seconds(30)
            while reports.withLock({ $0.count }) < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let failures = reports.withLock { $0 }.compactMap { result -> KafkaError? in
                if case .failure(let error) = result { error } else { nil }
            }
            #expect(failures.count == 3, "each record reported once, as failed")
            for failure in failures {
                // Before the fix: `closed`, "the producer closed before the record was acknowledged".
                #expect(failure.code == .fatal, "\(failure)")
                #expect(failure.librdkafkaName == "OUT_OF_ORDER_SEQUENCE_NUMBER", "\(failure)")
                #expect(failure.topic == "stuck")
            }
            while producer.fatalFailure == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(producer.fatalFailure?.code == .fatal)
            let refused = #expect(throws: KafkaError.self) {
                try producer.produce(KafkaProducerRecord(topic: "stuck", value: [1])) { _ in }
            }
            #expect(refused?.code == .fatal)
            await producer.close(timeout: .milliseconds(500))
        }
    }

    @Test("a flush that times out returns after its timeout, not twice that")
    func flushWaitsItsTimeoutOnce() async throws {
        try await withEmbeddedKafka(topics: ["stuck": 1]) { kafka in
            try kafka.setLeader(of: "stuck", partition: 0, to: nil)
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            try producer.produce(KafkaProducerRecord(topic: "stuck", partition: 0, value: [1])) { _ in }
            let started = ContinuousClock.now
            let error = await #expect(throws: KafkaError.self) { try await producer.flush(timeout: .seconds(10)) }
            let elapsed = ContinuousClock.now - started
            #expect(error?.code == .deliveryFailed)
            #expect(elapsed >= .seconds(10))
            // Before the fix: librdkafka's flush waited 10 s, then the wait for the reports another 10 s. The bound
            // leaves a loaded machine 6 s (CI took 9.3 s over a 5 s timeout once, where this test allowed 8 s; and
            // 2.56 s over a 3 s timeout, where it allowed 2.5).
            #expect(elapsed < .seconds(16), "took \(elapsed)")
            await producer.close(timeout: .milliseconds(200))
        }
    }
}
