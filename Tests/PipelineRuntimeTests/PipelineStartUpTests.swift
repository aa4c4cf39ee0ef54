import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime
import PlatformSinks
import ServiceLifecycle
import TestSupport
import Testing

/// A stop asked for while the pipeline starts (its look-ups of the topics waiting on brokers that do not answer).
@Suite("Stopping while starting")
struct PipelineStartUpTests {
    /// Found by a review of outage shutdowns: SIGTERM to an instance whose brokers were gone waited out the start-up's
    /// look-up (10 s for each topic) and then exited with its error, because nothing heard the stop before the
    /// processing started.
    @Test("stop() while the topics are looked up on brokers that never answer ends the run without an error", .timeLimit(.minutes(2)))
    func stopWhileLookingUpTopics() async throws {
        let (pipeline, recorder) = pipelineOfAbsentBrokers()
        let running = Task { try await pipeline.run() }
        try await waitUntilStarting(recorder)
        pipeline.stop()
        // Without the stop heard, this throws the look-up's timeout (`metadataFailed`).
        try await running.value
        #expect(recorder.lines.contains { $0.message == "Pipeline stopped while starting, before it read any event" })
        #expect(!recorder.lines.contains { $0.level >= .error }, "\(recorder.lines.filter { $0.level >= .error }.map(\.message))")
    }

    @Test("a graceful shutdown while the topics are looked up ends the service without an error", .timeLimit(.minutes(2)))
    func gracefulShutdownWhileLookingUpTopics() async throws {
        let (pipeline, recorder) = pipelineOfAbsentBrokers()
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: pipeline)], logger: Logger(label: "test-group") { _ in SwiftLogNoOpLogHandler() })
        )
        let running = Task { try await group.run() }
        try await waitUntilStarting(recorder)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(recorder.lines.contains { $0.message == "Shutdown requested while starting: stopping" })
        #expect(recorder.lines.contains { $0.message == "Pipeline stopped while starting, before it read any event" })
    }

    /// Found by review: warnings held back while the state topics were folded (ten a window are logged) were never
    /// counted when the start-up then ended early, here on a sink whose key file is missing.
    @Test("a start-up that fails after folding the state says how many warnings it held back")
    func heldBackWarningsAreCountedWhenTheStartUpFails() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, base in
            let unreadable = (0..<15).map { index in ("campaign-\(index)", Array("not a campaign event \(index)".utf8)) }
            try await produce(unreadable, to: base.topics.definitions, kafka: kafka)
            var configuration = base
            configuration.sinks.routes[.fcm] = ["fcm"]
            configuration.sinks.fcm.serviceAccount = .file(path: "/nonexistent/fcm-service-account.json")
            let recorder = LogRecorder()
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: recorder.logger(level: .info))
            await #expect(throws: (any Error).self) { try await pipeline.run() }
            let ignored = recorder.lines.filter { $0.level == .warning && $0.message.hasPrefix("Campaign event ignored") }
            #expect(ignored.count == 11, "\(ignored.map(\.message))")
            #expect(ignored.last?.message == "Campaign event ignored: 5 more not logged")
        }
    }

    /// A pipeline whose bootstrap server never answers (nothing listens on port 1), and the recorder of its log.
    private func pipelineOfAbsentBrokers() -> (CampaignPipeline, LogRecorder) {
        let recorder = LogRecorder()
        let pipeline = CampaignPipeline(
            configuration: PipelineConfiguration(bootstrapServers: ["127.0.0.1:1"]),
            registry: builtinRegistry,
            logger: recorder.logger(level: .info)
        )
        return (pipeline, recorder)
    }

    /// Waits until the pipeline has begun its start-up.
    private func waitUntilStarting(_ recorder: LogRecorder) async throws {
        _ = try await eventually("the pipeline to start", timeout: clusterTimeout) {
            recorder.lines.contains { $0.message == "Pipeline starting" } ? true : nil
        }
    }
}
