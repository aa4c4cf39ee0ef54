import Foundation
import KafkaClient
import Logging
import PipelineCore
@testable import PipelineRuntime
import PlatformSinks
import PushSinks
import SinkTestSupport
import Synchronization
import Testing

/// The pipeline with the FCM and APNs HTTP sinks, against local TLS servers started by the tests, on the
/// embedded broker.
@Suite("Pipeline with platform sinks", .serialized, .timeLimit(.minutes(5)))
struct PipelinePlatformSinkTests {
    /// Produces events (one recipient and token each, `token-<recipient>`) and returns their positions.
    func produceEvents(_ kinds: [String], prefix: String, kafka: EmbeddedKafka, configuration: PipelineConfiguration) async throws -> [String: KafkaTopicPartitionOffset] {
        let factory = try EventFactory()
        let inputs = kinds.enumerated().map { index, kind -> (key: String, value: [UInt8]) in
            let recipient = "\(prefix)-\(index)"
            return (recipient, JSONValue.object(factory.event(kind, id: "\(prefix)-event-\(index)", recipient: recipient)).encoded())
        }
        try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
        var positions: [String: KafkaTopicPartitionOffset] = [:]
        for record in try await readAll(configuration.topics.sends, kafka: kafka) {
            let token = "token-" + String(decoding: record.key ?? [], as: UTF8.self)
            positions[token] = KafkaTopicPartitionOffset(topic: record.topic, partition: record.partition, offset: record.offset)
        }
        return positions
    }

    /// The group's committed offsets of the sends topic.
    static func committedOffsets(_ configuration: PipelineConfiguration, kafka: EmbeddedKafka, partitions: Int32) async throws -> [Int32: Int64] {
        let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: configuration.groupID), logger: testLogger)
        defer { Task { await check.close() } }
        let committed = try await check.committed((0..<partitions).map { KafkaTopicPartition(topic: configuration.topics.sends, partition: $0) })
        return Dictionary(uniqueKeysWithValues: committed.map { ($0.partition, $0.offset) })
    }

    /// Checks that every event below a committed offset was accepted by the platform.
    static func expectNothingCommittedPastUndelivered(
        committed: [Int32: Int64],
        positions: [String: KafkaTopicPartitionOffset],
        accepted: Set<String>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (token, position) in positions where position.offset < (committed[position.partition] ?? -1) {
            #expect(accepted.contains(token), "\(token) at \(position) is committed but was never accepted", sourceLocation: sourceLocation)
        }
    }

    @Test("platform answers become outcomes: delivered, invalid_token (+ campaign.tokens), rejected_by_platform, payload_too_large, throttled then delivered, unavailable after the deadline")
    func outcomesAndTokenEvents() async throws {
        let fcm = try await FakeFCM.start()
        let apns = try await FakeAPNs.start()
        defer { Task { await fcm.shutdown(); await apns.shutdown() } }
        try await withPipelineCluster(partitions: 3) { kafka, base in
            var configuration = base
            configuration.sinks.routes = [.fcm: ["fcm"], .apns: ["apns", "kafka"]]
            configuration.sinks.fcm = fcm.configuration
            configuration.sinks.apns = apns.configuration
            configuration.sinks.retry = RetryPolicy(initialBackoff: .milliseconds(100), maxBackoff: .milliseconds(400), deadline: .seconds(8))
            // 0 basic-fcm, 1 basic-apns, 2 carousel-fcm, 3 carousel-apns, 4 timer-fcm, 5 timer-apns, then 24 more.
            let kinds = (0..<30).map { EventFactory.kinds[$0 % EventFactory.kinds.count] }
            fcm.answers.script("token-s-0", [.json(404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#)])
            apns.answers.script("token-s-1", [.json(410, #"{"reason":"Unregistered","timestamp":1763800000000}"#)])
            fcm.answers.script("token-s-2", [.json(400, #"{"error":{"code":400,"message":"Invalid value at 'message.android.ttl'","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}"#)])
            apns.answers.script("token-s-3", [.json(413, #"{"reason":"PayloadTooLarge"}"#)])
            fcm.answers.script("token-s-4", [.json(429, #"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#, headers: [("retry-after", "1")])])
            apns.answers.script("token-s-5", Array(repeating: .json(503, #"{"reason":"ServiceUnavailable"}"#), count: 100))
            _ = try await produceEvents(kinds, prefix: "s", kafka: kafka, configuration: configuration)

            // Everything logged, at every level, is captured: the keys must never appear in it.
            let captured = CapturedLog()
            var logger = Logger(label: "secrets-check") { _ in captured }
            logger.logLevel = .trace
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: logger)
            try await runUntilIdle(pipeline, timeout: .seconds(60))
            let logText = captured.text
            #expect(!logText.isEmpty)
            for secret in [apns.p8, fcm.serviceAccountJSON] {
                let keyLines = secret.replacingOccurrences(of: "\\n", with: "\n").split(separator: "\n").filter { $0.count > 40 }
                #expect(keyLines.count >= 2)
                for line in keyLines.prefix(5) { #expect(!logText.contains(line), "key material in the log") }
            }
            #expect(!logText.contains("access-token-"), "access tokens are not logged either")

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            #expect(outcomes.count == 30, "exactly one outcome per event")
            let byEvent = Dictionary(grouping: outcomes, by: { $0.identity.eventId ?? "" })
            #expect(byEvent.count == 30)
            func outcome(_ index: Int) -> AnalyticsEvent? { byEvent["s-event-\(index)"]?.first }
            #expect(outcome(0)?.kind == .failed)
            #expect(outcome(0)?.reasonCode == "invalid_token")
            #expect(outcome(0)?.sink == "fcm:test-project")
            #expect(outcome(1)?.reasonCode == "invalid_token")
            #expect(outcome(2)?.reasonCode == "rejected_by_platform")
            #expect(outcome(3)?.reasonCode == "payload_too_large")
            #expect(outcome(4)?.kind == .delivered, "throttled, then delivered")
            #expect(outcome(5)?.kind == .failed)
            #expect(outcome(5)?.reasonCode == "unavailable")
            #expect(outcome(5)?.reasonDetail?.contains("gave up after") == true)
            for index in 6..<30 {
                #expect(outcome(index)?.kind == .delivered, "s-event-\(index)")
            }
            // The metrics count the failures by the code their records carry.
            #expect(
                pipeline.statistics.snapshot.outcomeReasons[.failed]
                    == ["invalid_token": 2, "rejected_by_platform": 1, "payload_too_large": 1, "unavailable": 1]
            )
            #expect(outcome(7)?.sink == "apns:\(apns.server.baseURL),kafka:push.apns", "every sink of the route, in route order")
            #expect(outcome(6)?.sink == "fcm:test-project")
            #expect(fcm.answers.answered.filter { $0.token == "token-s-4" }.map(\.status) == [429, 200])

            // Dead tokens are reported on campaign.tokens.
            let tokens = try await readAll(configuration.topics.tokens, kafka: kafka).map { try TokenInvalidatedEvent(json: $0.value ?? []) }
            #expect(Set(tokens.map(\.token)) == ["token-s-0", "token-s-1"])
            // Times to the millisecond, as every analytics record's.
            #expect((outcomes.map(\.occurredAt) + tokens.map(\.occurredAt)).allSatisfy { $0.nanoseconds % 1_000_000 == 0 })
            let apnsToken = try #require(tokens.first { $0.platform == .apns })
            #expect(apnsToken.recipientId == "s-1")
            #expect(apnsToken.sourceEventId == "s-event-1")
            #expect(apnsToken.invalidatedAt == Timestamp(secondsSince1970: 1_763_800_000))
            #expect(apnsToken.detail.contains("Unregistered"))
            #expect(tokens.first { $0.platform == .fcm }?.detail.contains("UNREGISTERED") == true)

            // The Kafka sink beside APNs got every APNs payload.
            #expect(try await readAll(configuration.topics.apns, kafka: kafka).count == 15)
            // Everything was committed.
            let again = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            #expect(again.statistics.snapshot.totalIn == 0)
        }
    }

    @Test("a 30-second FCM outage in the middle of 10,000 events loses nothing and commits nothing undelivered")
    func outage() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        try await withPipelineCluster(partitions: 6) { kafka, base in
            var configuration = base
            configuration.untilIdle = .seconds(2)
            configuration.sinks.routes = [.fcm: ["fcm"], .apns: ["kafka"]]
            configuration.sinks.fcm = fcm.configuration
            configuration.sinks.retry = RetryPolicy(initialBackoff: .milliseconds(200), maxBackoff: .seconds(2), deadline: .seconds(300))
            let kinds = (0..<10_000).map { ["basic-fcm", "carousel-fcm", "timer-fcm"][$0 % 3] }
            let positions = try await produceEvents(kinds, prefix: "o", kafka: kafka, configuration: configuration)
            #expect(positions.count == 10_000)

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            let settings = configuration
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await runUntilIdle(pipeline, timeout: .seconds(240)) }
                group.addTask {
                    try await eventually("3,000 deliveries before the outage", timeout: .seconds(120), every: .milliseconds(20)) {
                        fcm.answers.acceptedTokens.count >= 3_000 ? true : nil
                    }
                    try await fcm.server.stop()
                    // Requests the server was already handling may still be answered into closed connections.
                    try await Task.sleep(for: .seconds(1))
                    let before = fcm.answers.acceptedTokens.count
                    try await Task.sleep(for: .seconds(24))
                    // Mid-outage: nothing undelivered is committed, and nothing was accepted.
                    let committed = try await Self.committedOffsets(settings, kafka: kafka, partitions: 6)
                    Self.expectNothingCommittedPastUndelivered(committed: committed, positions: positions, accepted: fcm.answers.acceptedTokens)
                    #expect(fcm.answers.acceptedTokens.count == before)
                    #expect(committed.values.reduce(0, +) < 10_000, "the outage holds the commits back")
                    try await Task.sleep(for: .seconds(5))
                    try await fcm.server.restart()
                }
                try await group.waitForAll()
            }

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            expectOneOutcomeEach(outcomes, count: 10_000)
            #expect(outcomes.allSatisfy { $0.kind == .delivered })
            #expect(fcm.answers.acceptedTokens.count == 10_000, "every message reached FCM")
            let committed = try await Self.committedOffsets(configuration, kafka: kafka, partitions: 6)
            #expect(committed.values.reduce(0, +) == 10_000, "everything committed after recovery")
        }
    }

    @Test("APNs refusing the provider token stops consumption with a clear error and commits nothing past the last success")
    func authFailureStops() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        try await withPipelineCluster(partitions: 3) { kafka, base in
            var configuration = base
            configuration.untilIdle = nil
            configuration.sinks.routes = [.fcm: ["kafka"], .apns: ["apns"]]
            var apnsConfiguration = apns.configuration
            apnsConfiguration.concurrency = 8
            configuration.sinks.apns = apnsConfiguration
            let kinds = (0..<3_000).map { ["basic-apns", "carousel-apns", "timer-apns"][$0 % 3] }
            let positions = try await produceEvents(kinds, prefix: "a", kafka: kafka, configuration: configuration)

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            let running = Task { try await pipeline.run() }
            try await eventually("500 deliveries", timeout: .seconds(60), every: .milliseconds(10)) {
                apns.answers.acceptedTokens.count >= 500 ? true : nil
            }
            apns.answers.setFallback(.json(403, #"{"reason":"InvalidProviderToken"}"#))
            let result = await running.result
            guard case .failure(let error) = result, let stopped = error as? PipelineRuntimeError, case .sinkStopped(let sink, let reason) = stopped else {
                Issue.record("expected the pipeline to stop with sinkStopped, got \(result)")
                return
            }
            #expect(sink == "apns:\(apns.server.baseURL)")
            #expect(reason.contains("APNs 403 InvalidProviderToken"))
            #expect(stopped.description.contains("stopped consuming"))

            let refused = apns.answers.answered.filter { $0.status == 403 }
            #expect(refused.count <= 8, "at most one refusal per attempt in flight (8); the backlog is not burnt through (\(refused.count))")
            let accepted = apns.answers.acceptedTokens
            #expect(accepted.count < 3_000)
            let committed = try await Self.committedOffsets(configuration, kafka: kafka, partitions: 3)
            Self.expectNothingCommittedPastUndelivered(committed: committed, positions: positions, accepted: accepted)

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            #expect(!outcomes.contains { $0.kind == .failed }, "nothing is marked failed for the sink's own credentials")
            #expect(outcomes.allSatisfy { $0.kind == .delivered })
            #expect(Set(outcomes.compactMap(\.identity.recipientId).map { "token-\($0)" }).isSubset(of: accepted))
        }
    }

    @Test("while FCM throttles, only the partitions waiting on it are paused; the others keep flowing; nothing is lost")
    func throttlingPausesOnlyWaitingPartitions() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        fcm.answers.setFallback(.json(429, #"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#, headers: [("retry-after", "1")]))
        try await withPipelineCluster(partitions: 2) { kafka, base in
            var configuration = base
            configuration.untilIdle = nil
            // High enough that only the throttled sink, not the in-flight limit, can pause partition 0.
            configuration.maxInFlightPerPartition = 20_000
            configuration.sinks.routes = [.fcm: ["fcm"], .apns: ["kafka"]]
            configuration.sinks.fcm = fcm.configuration
            // The consumer's lag is measured with each Progress line.
            configuration.progressLogInterval = .seconds(1)
            let factory = try EventFactory()
            func records(_ kind: String, _ range: Range<Int>, partition: Int32) -> [KafkaProducerRecord] {
                range.map { index in
                    let event = JSONValue.object(factory.event(kind, id: "t-\(index)", recipient: "t-\(index)")).encoded()
                    return KafkaProducerRecord(topic: configuration.topics.sends, partition: partition, key: Array("t-\(index)".utf8), value: event)
                }
            }
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            // Partition 0: FCM events, which wait on the throttled sink.
            for result in await producer.send(contentsOf: records("basic-fcm", 0..<3_000, partition: 0)) { _ = try result.get() }

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            let fcmPartition = KafkaTopicPartition(topic: configuration.topics.sends, partition: 0)
            try await whileRunning(pipeline) {
                try await eventually("partition 0 paused while FCM throttles", timeout: clusterTimeout, every: .milliseconds(50)) {
                    pipeline.progress.withLock { $0[fcmPartition] }?.isPaused == true ? true : nil
                }
                // The batch being processed when the pause came is finished; then nothing more is read, not even
                // events produced after the pause (a fast run may have read all of the first 3,000 by then).
                try await Task.sleep(for: .seconds(1))
                for result in await producer.send(contentsOf: records("basic-fcm", 3_000..<3_500, partition: 0)) { _ = try result.get() }
                try await Task.sleep(for: .seconds(1))
                let readWhenPaused = pipeline.readPositions.withLock { $0[fcmPartition] } ?? 0
                #expect(readWhenPaused <= 3_000, "reading of the throttled partition stopped (\(readWhenPaused))")

                // Partition 1: APNs events to the Kafka sink, produced while FCM throttles, are all delivered.
                for result in await producer.send(contentsOf: records("basic-apns", 3_500..<3_700, partition: 1)) { _ = try result.get() }
                try await eventually("partition 1 flows", timeout: clusterTimeout) {
                    let delivered = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
                    return delivered.filter { $0.identity.platform == .apns && $0.kind == .delivered }.count == 200 ? true : nil
                }
                #expect(pipeline.progress.withLock { $0[fcmPartition] }?.isPaused == true, "still paused")
                // As the metrics endpoint shows it (campaign_pipeline_throttled_sinks, _paused_partitions).
                #expect(pipeline.status.throttledSinks == 1 && pipeline.status.pausedPartitions == 1, "\(pipeline.status)")
                #expect((pipeline.readPositions.withLock { $0[fcmPartition] } ?? 0) == readWhenPaused, "nothing more read from it")
                #expect(fcm.answers.acceptedTokens.isEmpty)
                // Every FCM event waits (read or not; the paused partition's end is asked of its leader), no APNs one
                // (campaign_pipeline_consumer_lag).
                try await eventually("the lag to be measured", timeout: .seconds(10)) { pipeline.status.consumerLag == 3_500 ? true : nil }

                // FCM recovers: partition 0 resumes and everything is delivered, once.
                fcm.answers.setFallback(.json(200, #"{"name":"projects/test-project/messages/1"}"#))
                try await eventually("every event delivered", timeout: .seconds(120)) {
                    let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
                    return outcomes.count >= 3_700 ? true : nil
                }
                try await eventually("the gauges back to 0", timeout: .seconds(10)) {
                    pipeline.status.throttledSinks == 0 && pipeline.status.pausedPartitions == 0 && pipeline.status.consumerLag == 0 ? true : nil
                }
            }
            await producer.close()
            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            #expect(outcomes.count == 3_700)
            #expect(Set(outcomes.compactMap(\.identity.eventId)).count == 3_700)
            #expect(outcomes.allSatisfy { $0.kind == .delivered })
            #expect(fcm.answers.acceptedTokens.count == 3_500)
            let committed = try await Self.committedOffsets(configuration, kafka: kafka, partitions: 2)
            #expect(committed == [0: 3_500, 1: 200])
        }
    }
}

/// A log handler that keeps every message with its metadata, as text.
final class CapturedLog: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        lines.withLock { $0.append("\(event.level) \(event.message) \(metadata)") }
    }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
