import Foundation
import KafkaClient
import Logging
import PipelineCore
@testable import PipelineRuntime
import PushSinks
import Synchronization
import Testing
import TestSupport

/// Holds every outcome until ``release()``; delivers at once after it.
private final class HoldingSink: PushSink {
    let kind = "holding"
    let name = "holding"
    private let state = Mutex<(isReleased: Bool, held: [@Sendable (SinkOutcome) -> Void])>((false, []))

    var heldCount: Int { state.withLock { $0.held.count } }

    func release() {
        let held = state.withLock { state in
            state.isReleased = true
            defer { state.held = [] }
            return state.held
        }
        for completion in held { completion(.delivered(attempts: 1)) }
    }

    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        let isReleased = state.withLock { state in
            if !state.isReleased { state.held.append(completion) }
            return state.isReleased
        }
        if isReleased { completion(.delivered(attempts: 1)) }
    }
}

/// librdkafka reads on from the first offset still stored when the position it fetches from was deleted (retention,
/// while the pipeline lagged or was stopped), and said so only in its log: those records got no outcome, and nothing
/// counted them. They are now counted (`campaign_pipeline_records_deleted_unread_total`) and logged with their offsets.
@Suite("Records deleted before the pipeline read them", .timeLimit(.minutes(3)))
struct PipelineDeletedRecordsTests {
    /// Sends that render (every one of them delivered or expired, none rejected), numbered from `start`.
    func sends(_ range: Range<Int>) throws -> [(key: String, value: [UInt8])] {
        let factory = try EventFactory()
        return range.map { index in
            ("user-\(index)", JSONValue.object(factory.event("basic-fcm", id: "event-\(index)", recipient: "user-\(index)")).encoded())
        }
    }

    @Test("a reading that starts from a committed offset retention deleted counts the records between it and the first stored")
    func committedOffsetDeletedWhileStopped() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let partition = KafkaTopicPartition(topic: configuration.topics.sends, partition: 0)
            try await produceInSets(try sends(0..<30), to: partition, kafka: kafka)
            let first = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(first)
            #expect(first.statistics.snapshot.recordsDeletedUnread == 0)
            // While no instance runs, 60 more sends, then retention deletes the first records, past the group's commit.
            try await produceInSets(try sends(30..<90), to: partition, kafka: kafka)
            let low = try await deleteFirstRecords(of: partition, past: 30, before: 90, kafka: kafka)

            let recorder = LogRecorder()
            let second = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: recorder.logger(level: .info))
            try await runUntilIdle(second)
            #expect(second.statistics.snapshot.recordsDeletedUnread == Int(low - 30))
            #expect(second.offsetsDeletedBeforeRead == [partition: [30..<low]])
            let warning = recorder.lines.first { $0.message.hasPrefix("Records were deleted before the pipeline read them") }
            #expect(warning?.level == .warning)
            #expect(warning?.metadata["offsets"]?.description == "30..<\(low)", "\(String(describing: warning))")
            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            let numbers = Set(outcomes.compactMap { $0.identity.eventId.flatMap { Int64($0.dropFirst("event-".count)) } })
            #expect(numbers == Set(Array(0..<30) + Array(low..<90)), "no outcome for the records deleted, one for each other send")
        }
    }

    @Test("a reading whose next records retention deletes while it is paused counts the records it jumps over")
    func recordsDeletedWhileLagging() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, base in
            var configuration = base
            configuration.untilIdle = nil
            configuration.maxInFlightPerPartition = 5
            configuration.sinks.routes = [.fcm: ["holding"], .apns: ["holding"]]
            let partition = KafkaTopicPartition(topic: configuration.topics.sends, partition: 0)
            let sink = HoldingSink()
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, sinks: [sink], logger: testLogger)
            let (read, low) = try await whileRunning(pipeline) {
                try await produceInSets(try sends(0..<20), to: partition, kafka: kafka)
                // The sends read are held by the sink and the partition is paused, its reading where they end: at 20
                // when its first fetch found both sets of ten, at 10 when it found the first alone (a CI run under
                // load: the test waited for twenty).
                try await eventually("the partition paused", timeout: clusterTimeout) {
                    sink.heldCount >= configuration.maxInFlightPerPartition && pipeline.progress.withLock({ $0[partition]?.isPaused }) == true
                        ? true : nil
                }
                try await Task.sleep(for: .seconds(1))
                let read = Int64(sink.heldCount)
                #expect(read == 10 || read == 20, "whole sets are read: \(read)")
                try await produceInSets(try sends(20..<80), to: partition, kafka: kafka)
                let low = try await deleteFirstRecords(of: partition, past: 20, before: 80, kafka: kafka)
                // Resumed once the held sends are done: its position is no longer stored.
                sink.release()
                try await eventually("the jump checked", timeout: .seconds(30)) {
                    pipeline.statistics.snapshot.recordsDeletedUnread > 0 ? true : nil
                }
                return (read, low)
            }
            #expect(pipeline.statistics.snapshot.recordsDeletedUnread == Int(low - read))
            #expect(pipeline.offsetsDeletedBeforeRead == [partition: [read..<low]])
        }
    }
}
