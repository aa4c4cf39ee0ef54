import Foundation
import KafkaClient
import Logging
import Testing

/// A logger for tests: warnings and worse go to stderr, so a failing test shows what librdkafka said.
let testLogger: Logger = {
    var logger = Logger(label: "kafka-tests") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .error
    return logger
}()

/// Runs `body` with a fresh embedded cluster that has the given topics, and shuts the cluster down after.
func withEmbeddedKafka<T>(
    brokers: Int = 1,
    topics: [String: Int32] = [:],
    _ body: (EmbeddedKafka) async throws -> T
) async throws -> T {
    let kafka = try EmbeddedKafka(brokers: brokers, logger: testLogger)
    defer { kafka.shutdown() }
    for (topic, partitions) in topics {
        try kafka.createTopic(topic, partitions: partitions)
    }
    return try await body(kafka)
}

/// A group id no other test uses.
func uniqueGroup(_ name: String = #function) -> String {
    "test-\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))"
}

func producerConfiguration(_ kafka: EmbeddedKafka) -> KafkaProducerConfiguration {
    var configuration = KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers])
    configuration.linger = .milliseconds(2)
    return configuration
}

func consumerConfiguration(_ kafka: EmbeddedKafka, group: String?) -> KafkaConsumerConfiguration {
    var configuration = KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: group)
    configuration.sessionTimeout = .seconds(6)
    configuration.properties["heartbeat.interval.ms"] = "500"
    return configuration
}

/// Sends `count` records to `topic`, keyed so they spread over partitions, with a header each.
@discardableResult
func produceNumbered(
    _ count: Int,
    to topic: String,
    kafka: EmbeddedKafka,
    startingAt start: Int = 0,
    timestamp: (Int) -> Date? = { _ in nil }
) async throws -> [KafkaDeliveryReport] {
    let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
    let records = (start..<(start + count)).map { index in
        KafkaProducerRecord(
            topic: topic,
            key: Array("key-\(index % 97)".utf8),
            value: Array("value-\(index)".utf8),
            headers: [KafkaHeader(key: "index", string: String(index))],
            timestamp: timestamp(index)
        )
    }
    let results = await producer.send(contentsOf: records)
    await producer.close()
    return try results.map { try $0.get() }
}

/// Reads from `messages` until `count` records arrived or `timeout` passed.
func collect(
    _ count: Int,
    from consumer: KafkaConsumer,
    timeout: Duration = .seconds(30)
) async throws -> [KafkaConsumerMessage] {
    let received = try await within(timeout) {
        var received: [KafkaConsumerMessage] = []
        for try await message in consumer.messages {
            received.append(message)
            if received.count >= count { break }
        }
        return received
    }
    guard let received else {
        throw TestTimeout(description: "timed out after \(timeout) waiting for \(count) records")
    }
    return received
}

/// Waits `duration` for a record from `consumer`, and records an issue if one arrives or the stream ends meanwhile; a
/// failure of the stream is thrown (a `try?` around ``collect(_:from:timeout:)`` took any error for "nothing came").
func expectNoRecord(from consumer: KafkaConsumer, for duration: Duration, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let arrived = try await within(duration) { () -> String in
        for try await message in consumer.messages { return "a record of partition \(message.partition) at offset \(message.offset)" }
        return "the end of the stream"
    }
    #expect(arrived == nil, "nothing should arrive, but got \(arrived ?? "")", sourceLocation: sourceLocation)
}

/// Waits until `condition` holds, looking every `interval`; throws ``TestTimeout`` saying `what` did not happen after
/// `timeout`.
func waitUntil(_ what: String, within timeout: Duration, every interval: Duration = .milliseconds(20), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TestTimeout(description: what) }
        try await Task.sleep(for: interval)
    }
}

/// Runs `body`, giving up after `timeout` (then `nil`): a reader waiting for records that never come would hang the
/// test otherwise.
func within<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next()!
        group.cancelAll()
        return first
    }
}

/// A producer whose bootstrap answers nothing: every record fails once `messageTimeout` passes (or the producer closes).
func producerWithoutBroker(messageTimeout: Duration) throws -> KafkaProducer {
    var configuration = KafkaProducerConfiguration(bootstrapServers: ["127.0.0.1:1"])
    configuration.messageTimeout = messageTimeout
    return try KafkaProducer(configuration: configuration, logger: testLogger)
}

struct TestTimeout: Error, CustomStringConvertible {
    var description: String
}

extension KafkaConsumerMessage {
    var valueString: String { String(decoding: value ?? [], as: UTF8.self) }
}

/// Whether the values only go up (checked without printing the whole array on failure).
func isAscending<T: Comparable>(_ values: [T]) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
}
