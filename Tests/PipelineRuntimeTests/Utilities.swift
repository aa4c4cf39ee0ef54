import Foundation
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime
import Testing
import BasicTemplate
import CarouselTemplate
import TimerTemplate

let testLogger: Logger = {
    var logger = Logger(label: "pipeline-tests") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = Logger.Level(rawValue: ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"] ?? "error") ?? .error
    return logger
}()

/// The shipped templates.
let builtinRegistry = TemplateRegistry([BasicTemplate(), CarouselTemplate(), TimerTemplate()])

/// The repository root (for Config/samples).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Starts an embedded cluster with the pipeline's topics (`partitions` each) and runs `body`.
func withPipelineCluster<T>(
    partitions: Int32 = 6,
    _ body: (EmbeddedKafka, PipelineConfiguration) async throws -> T
) async throws -> T {
    let kafka = try EmbeddedKafka(brokers: 1, logger: testLogger)
    defer { kafka.shutdown() }
    var configuration = PipelineConfiguration(bootstrapServers: [kafka.bootstrapServers])
    configuration.groupID = "pipeline-test-\(UUID().uuidString.prefix(8))"
    configuration.untilIdle = .seconds(1)
    configuration.consumerProperties = ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500"]
    for topic in configuration.topics.all {
        try kafka.createTopic(topic, partitions: partitions)
    }
    return try await body(kafka, configuration)
}

/// Sends raw records to a topic, keyed, in order.
func produce(_ values: [(key: String, value: [UInt8])], to topic: String, kafka: EmbeddedKafka) async throws {
    let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
    let results = await producer.send(contentsOf: values.map {
        KafkaProducerRecord(topic: topic, key: Array($0.key.utf8), value: $0.value, headers: [KafkaHeader(key: "origin", string: "test")])
    })
    await producer.close()
    for result in results { _ = try result.get() }
}

/// Puts `values` on `partition` in message sets of ten records, each acknowledged before the next: the embedded
/// broker deletes whole sets when it runs out of room (``deleteFirstRecords(of:past:before:kafka:)``).
func produceInSets(_ values: [(key: String, value: [UInt8])], to partition: KafkaTopicPartition, kafka: EmbeddedKafka) async throws {
    let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
    for start in stride(from: 0, to: values.count, by: 10) {
        let records = values[start..<min(start + 10, values.count)].map {
            KafkaProducerRecord(topic: partition.topic, partition: partition.partition, key: Array($0.key.utf8), value: $0.value)
        }
        for result in await producer.send(contentsOf: Array(records)) { _ = try result.get() }
    }
    await producer.close()
}

/// Writes records after the partition's until the embedded broker, which keeps about 5 MiB per partition, deletes
/// its first records as retention would: those up to `past` at least, not all of those before `end`. Returns the
/// partition's first offset still stored. The records it writes (32 KiB and 4 KiB of dots, keyed `filler`) are no
/// events.
func deleteFirstRecords(of partition: KafkaTopicPartition, past: Int64, before end: Int64, kafka: EmbeddedKafka) async throws -> Int64 {
    let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
    let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil), logger: testLogger)
    func filler(_ count: Int, bytes: Int) async throws {
        let records = (0..<count).map { _ in
            KafkaProducerRecord(topic: partition.topic, partition: partition.partition, key: Array("filler".utf8), value: [UInt8](repeating: 0x2E, count: bytes))
        }
        for result in await producer.send(contentsOf: records) { _ = try result.get() }
    }
    // 4.4 MiB at once, then 4 KiB at a time until the first records go.
    try await filler(140, bytes: 32 * 1024)
    var low = try await consumer.watermarks(topic: partition.topic, partition: partition.partition).low
    #expect(low == 0, "nothing deleted before the last steps")
    while low <= past {
        try await filler(1, bytes: 4 * 1024)
        low = try await consumer.watermarks(topic: partition.topic, partition: partition.partition).low
    }
    await producer.close()
    await consumer.close()
    #expect(low < end, "some records before \(end) are still stored (first offset \(low))")
    return low
}

/// Every record of a topic at the moment of the call. It reads each partition up to its high watermark's last
/// offset, so a topic ending in a transaction marker (``TransactionMarkers``) keeps it waiting: not for those.
func readAll(_ topic: String, kafka: EmbeddedKafka) async throws -> [KafkaConsumerMessage] {
    let consumer = try KafkaConsumer(
        configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil),
        logger: testLogger
    )
    let count = try await consumer.partitionCount(topic: topic)
    var remaining: [Int32: Int64] = [:]
    for partition in 0..<count {
        let marks = try await consumer.watermarks(topic: topic, partition: partition)
        if marks.high > marks.low { remaining[partition] = marks.high }
    }
    try consumer.assign((0..<count).map { KafkaTopicPartitionOffset(topic: topic, partition: $0, offset: KafkaOffset.beginning) })
    var records: [KafkaConsumerMessage] = []
    var iterator = consumer.messages.makeAsyncIterator()
    let deadline = ContinuousClock.now + .seconds(60)
    while !remaining.isEmpty, ContinuousClock.now < deadline, let batch = try await iterator.nextBatch() {
        for message in batch {
            records.append(message)
            if let end = remaining[message.partition], message.offset + 1 >= end { remaining[message.partition] = nil }
        }
    }
    await consumer.close()
    return records
}

/// The analytics events of a topic, decoded.
func analytics(_ records: [KafkaConsumerMessage]) throws -> [AnalyticsEvent] {
    try records.map { try AnalyticsEvent(json: $0.value ?? []) }
}

/// Builds realistic events from the samples in Config/samples.
struct EventFactory {
    private let samples: [String: JSONObject]

    init() throws {
        var samples: [String: JSONObject] = [:]
        let folder = repositoryRoot.appendingPathComponent("Config/samples")
        for name in ["basic-fcm", "basic-apns", "carousel-fcm", "carousel-apns", "timer-fcm", "timer-apns"] {
            let data = try Data(contentsOf: folder.appendingPathComponent("\(name).json"))
            guard case .object(let object) = try JSONValue(parsing: Array(data)) else {
                throw TestFailure(description: "\(name).json is not a JSON object")
            }
            samples[name] = object
        }
        self.samples = samples
    }

    static let kinds = ["basic-fcm", "basic-apns", "carousel-fcm", "carousel-apns", "timer-fcm", "timer-apns"]

    /// A valid event of the given kind, deliverable now (timers count down for an hour).
    func event(_ kind: String, id: String, recipient: String, occurredAt: Date = Date(), timerSeconds: Int = 3600) -> JSONObject {
        var event = samples[kind]!
        event["eventId"] = .string(id)
        event["occurredAt"] = .string(Self.rfc3339(occurredAt))
        var recipientObject = event["recipient"]!.objectValue!
        recipientObject["id"] = .string(recipient)
        recipientObject["token"] = .string("token-\(recipient)")
        event["recipient"] = .object(recipientObject)
        if var content = event["content"]?.objectValue, var remind = content["remindLater"]?.objectValue {
            remind["at"] = .string(Self.rfc3339(occurredAt.addingTimeInterval(86_400)))
            content["remindLater"] = .object(remind)
            event["content"] = .object(content)
        }
        if kind.hasPrefix("timer") {
            var content = event["content"]!.objectValue!
            content["timer"] = ["durationSeconds": .int(timerSeconds)]
            event["content"] = .object(content)
        }
        return event
    }

    /// A broken event and the field its rejection must name.
    func broken(_ variant: Int, id: String, recipient: String) -> (bytes: [UInt8], field: String) {
        switch variant % 5 {
        case 0:
            var event = self.event("basic-fcm", id: id, recipient: recipient)
            var content = event["content"]!.objectValue!
            content["title"] = nil
            event["content"] = .object(content)
            return (JSONValue.object(event).encoded(), "content.title")
        case 1:
            var event = self.event("basic-apns", id: id, recipient: recipient)
            event["template"] = "no-such-template"
            return (JSONValue.object(event).encoded(), "template")
        case 2:
            var event = self.event("basic-fcm", id: id, recipient: recipient)
            var content = event["content"]!.objectValue!
            content["colors"] = ["title": "red"]
            event["content"] = .object(content)
            return (JSONValue.object(event).encoded(), "content.colors.title")
        case 3:
            var event = self.event("carousel-fcm", id: id, recipient: recipient)
            var content = event["content"]!.objectValue!
            var items = content["items"]!.arrayValue!
            var third = items[2].objectValue!
            third["image"] = nil
            items[2] = .object(third)
            content["items"] = .array(items)
            event["content"] = .object(content)
            return (JSONValue.object(event).encoded(), "content.items[2].image")
        default:
            return (Array(#"{"eventId": "\#(id)", "template": "basic", "recipient": {"#.utf8), "$")
        }
    }

    /// `date` in RFC 3339, as ``Timestamp`` writes it: an `ISO8601DateFormatter` made per event (ICU's set-up) cost
    /// the tests that make thousands of events seconds of a cooperative thread.
    static func rfc3339(_ date: Date) -> String {
        Timestamp(date).rfc3339
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
}
