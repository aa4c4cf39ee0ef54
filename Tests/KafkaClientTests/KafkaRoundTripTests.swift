import Foundation
import KafkaClient
import Synchronization
import Testing

@Suite("Producing and consuming on the embedded broker")
struct KafkaRoundTripTests {
    @Test("10,000 records with keys and headers come back byte-identical, complete and in partition order")
    func roundTrip() async throws {
        try await withEmbeddedKafka(topics: ["round-trip": 6]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            var sent: [KafkaProducerRecord] = []
            for index in 0..<10_000 {
                // Binary values including zero bytes and non-UTF-8, to check bytes are not treated as text.
                let value: [UInt8] = Array("payload-\(index)-".utf8) + [0, 255, UInt8(index % 256), 0x80]
                sent.append(
                    KafkaProducerRecord(
                        topic: "round-trip",
                        key: Array("recipient-\(index % 50)".utf8),
                        value: value,
                        headers: [
                            KafkaHeader(key: "index", string: String(index)),
                            KafkaHeader(key: "no-value", value: nil),
                            KafkaHeader(key: "binary", value: [0, 1, 2, 0xFF]),
                            KafkaHeader(key: "zero-length", value: []),
                            KafkaHeader(key: "empty", value: nil),
                        ]
                    )
                )
            }
            let results = await producer.send(contentsOf: sent)
            await producer.close()
            let reports = try results.map { try $0.get() }
            #expect(Set(reports.map(\.partition)).count == 6, "keys should spread over all partitions")

            let consumer = try KafkaConsumer(
                configuration: consumerConfiguration(kafka, group: uniqueGroup()),
                logger: testLogger
            )
            try consumer.subscribe(topics: ["round-trip"])
            let received = try await collect(10_000, from: consumer, timeout: .seconds(60))
            await consumer.close()

            #expect(received.count == 10_000)
            let byIndex = Dictionary(uniqueKeysWithValues: received.map { (Int($0.header("index")!)!, $0) })
            #expect(byIndex.count == 10_000, "no record missing or duplicated")
            for (index, record) in sent.enumerated() {
                let message = try #require(byIndex[index])
                #expect(message.key == record.key)
                #expect(message.value == record.value)
                #expect(message.headers == record.headers)
                #expect(message.partition == reports[index].partition)
                #expect(message.offset == reports[index].offset)
                #expect(message.timestamp != nil)
            }
            // Within a partition, records arrive in offset order, which is the order they were sent in.
            for partition in 0..<Int32(6) {
                let offsets = received.filter { $0.partition == partition }.map(\.offset)
                #expect(isAscending(offsets), "partition \(partition) out of order")
                let indexes = received.filter { $0.partition == partition }.map { Int($0.header("index")!)! }
                #expect(isAscending(indexes), "partition \(partition) not in send order")
            }
        }
    }

    @Test("send returns the partition and offset, and a chosen partition is honoured")
    func deliveryReport() async throws {
        try await withEmbeddedKafka(topics: ["reports": 3]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let first = try await producer.send(KafkaProducerRecord(topic: "reports", partition: 2, value: Array("a".utf8)))
            let second = try await producer.send(KafkaProducerRecord(topic: "reports", partition: 2, value: Array("b".utf8)))
            await producer.close()
            #expect(first == KafkaDeliveryReport(topic: "reports", partition: 2, offset: 0))
            #expect(second == KafkaDeliveryReport(topic: "reports", partition: 2, offset: 1))
        }
    }

    /// A delivery handler may queue a follow-up (the pipeline writes a timer's tombstone once its expiry is
    /// acknowledged): the record counts as pending until its handler has returned, so closing waits for the
    /// follow-up instead of refusing it.
    @Test("a record is pending while its delivery handler runs, so closing waits for what the handler queues")
    func followUpQueuedByADeliveryHandler() async throws {
        try await withEmbeddedKafka(topics: ["follow-up": 1]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let followUp = Mutex<Result<KafkaDeliveryReport, KafkaError>?>(nil)
            let pendingInHandler = Mutex<Int?>(nil)
            try producer.produce(KafkaProducerRecord(topic: "follow-up", value: Array("first".utf8))) { _ in
                pendingInHandler.withLock { $0 = producer.pendingCount }
                // Slow, on the delivery thread: close is waiting meanwhile.
                Thread.sleep(forTimeInterval: 0.3)
                do throws(KafkaError) {
                    try producer.produce(KafkaProducerRecord(topic: "follow-up", value: Array("second".utf8))) { result in
                        followUp.withLock { $0 = result }
                    }
                } catch {
                    followUp.withLock { $0 = .failure(error) }
                }
            }
            await producer.close()
            #expect(pendingInHandler.withLock { $0 } == 1, "the record is pending while its handler runs")
            let result = followUp.withLock { $0 }
            #expect(result.map { (try? $0.get()) != nil } == true, "the follow-up was delivered: \(String(describing: result))")
        }
    }

    @Test("one producer writing to several topics in turn puts every record on its own topic, in order")
    func interleavedTopics() async throws {
        let topics = ["alpha", "beta", "gamma"]
        try await withEmbeddedKafka(topics: ["alpha": 1, "beta": 1, "gamma": 1]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let records = (0..<300).map { index in
                KafkaProducerRecord(topic: topics[index % 3], value: Array("\(topics[index % 3])-\(index)".utf8))
            }
            let results = await producer.send(contentsOf: records)
            await producer.close()
            for (index, result) in results.enumerated() {
                let report = try result.get()
                #expect(report.topic == topics[index % 3])
                #expect(report.offset == Int64(index / 3))
            }
        }
    }

    @Test("a topic name librdkafka refuses is reported when sending, with the topic named")
    func refusedTopicName() async throws {
        try await withEmbeddedKafka(topics: ["fine": 1]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let name = String(repeating: "x", count: 600)  // longer than librdkafka accepts (512 bytes)
            let error = await #expect(throws: KafkaError.self) {
                _ = try await producer.send(KafkaProducerRecord(topic: name, value: Array("v".utf8)))
            }
            #expect(error?.topic == name)
            // The producer still works for a valid topic afterwards.
            let report = try await producer.send(KafkaProducerRecord(topic: "fine", value: Array("v".utf8)))
            #expect(report.topic == "fine")
            await producer.close()
        }
    }
}
