import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import PushSinks
import Synchronization
import Testing

@Suite("Payloads the sink refuses for good", .timeLimit(.minutes(2)))
struct PipelineSinkRefusalTests {
    @Test("a payload the Kafka sink refuses for good (too large) ends as push.failed, once, and is committed past")
    func refusedPayloadIsFailed() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let factory = try EventFactory()
            let inputs = (0..<40).map { index -> (key: String, value: [UInt8]) in
                let kind = EventFactory.kinds[index % EventFactory.kinds.count]
                return ("user-\(index)", JSONValue.object(factory.event(kind, id: "refused-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
            var limited = configuration
            // Payloads of these events are over 1,000 bytes; analytics records are well under.
            limited.producerProperties["message.max.bytes"] = "1000"
            try await CampaignPipeline(configuration: limited, registry: builtinRegistry, logger: testLogger).run()

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            let failed = outcomes.filter { $0.kind == .failed }
            #expect(Set(outcomes.compactMap(\.identity.eventId)).count == 40, "every event has an outcome")
            #expect(outcomes.count == 40, "exactly one each")
            #expect(!failed.isEmpty)
            for event in failed {
                #expect(event.reasonCode == "payload_too_large")
                #expect(event.sink == "kafka:push.fcm" || event.sink == "kafka:push.apns")
                #expect(event.reasonDetail?.contains("MSG_SIZE_TOO_LARGE") == true, "\(event.reasonDetail ?? "")")
            }
            // Everything was committed: a second run has nothing left to do.
            let again = CampaignPipeline(configuration: limited, registry: builtinRegistry, logger: testLogger)
            try await again.run()
            #expect(again.statistics.snapshot.totalIn == 0)
        }
    }

    /// A sink that finds a notification's expiresAt passed before it could send it (FCM and APNs retrying through an
    /// outage) answers expired: the event ends push.expired (cause ttl), as one read after its expiresAt does.
    @Test("a notification that expired waiting in a sink ends as push.expired with cause ttl, once, and is committed past")
    func expiredInTheSink() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            try await produce([("user-E", JSONValue.object(factory.event("basic-fcm", id: "expiring", recipient: "user-E")).encoded())], to: configuration.topics.sends, kafka: kafka)
            var routed = configuration
            routed.sinks.routes = [.fcm: ["expiring"], .apns: ["expiring"]]
            let pipeline = CampaignPipeline(configuration: routed, registry: builtinRegistry, sinks: [ExpiringSink()], logger: testLogger)
            try await pipeline.run()
            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            #expect(outcomes.map(\.kind) == [.expired])
            #expect(outcomes.first?.cause == .ttl)
            #expect(outcomes.first?.identity.eventId == "expiring")
            let again = CampaignPipeline(configuration: routed, registry: builtinRegistry, sinks: [ExpiringSink()], logger: testLogger)
            try await again.run()
            #expect(again.statistics.snapshot.totalIn == 0, "committed past")
        }
    }

    /// Found by review: a sink that stopped on refused credentials while the pipeline was already draining was taken
    /// for one of the drain's own cancellations, and `run` ended as if all were well (exit status 0).
    @Test("a sink stopped by refused credentials during the drain still ends run with sinkStopped, and nothing it held is committed")
    func sinkStoppedDuringTheDrain() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            try await produce([("user-D", JSONValue.object(factory.event("basic-fcm", id: "held", recipient: "user-D")).encoded())], to: configuration.topics.sends, kafka: kafka)
            var routed = configuration
            routed.sinks.routes = [.fcm: ["refusing"], .apns: ["refusing"]]
            let sink = RefusingOnceStoppedSink()
            let pipeline = CampaignPipeline(configuration: routed, registry: builtinRegistry, sinks: [sink], logger: testLogger)
            let run = Task { try await pipeline.run() }
            let start = ContinuousClock.now
            while !sink.hasNotification, ContinuousClock.now - start < .seconds(60) { try await Task.sleep(for: .milliseconds(10)) }
            #expect(sink.hasNotification)
            pipeline.stop()
            sink.stopRequested.withLock { $0 = true }
            let result = await run.result
            guard case .failure(let error) = result, case .sinkStopped(let name, let reason)? = error as? PipelineRuntimeError else {
                Issue.record("expected run to end with sinkStopped, got \(result)")
                return
            }
            #expect(name == "refusing")
            #expect(reason.contains("credentials refused"))
            #expect(try await readAll(configuration.topics.analytics, kafka: kafka).isEmpty, "no outcome for the event held")

            // Not committed past: the next run sends it.
            let again = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await again.run()
            #expect(again.statistics.snapshot.totalIn == 1)
            #expect(try analytics(try await readAll(configuration.topics.analytics, kafka: kafka)).map(\.kind) == [.delivered])
        }
    }
}

/// Holds every notification until the test says the pipeline is stopping, then stops as a sink whose credentials are
/// refused does: the notification is abandoned with `auth`.
private final class RefusingOnceStoppedSink: PushSink {
    let kind = "refusing"
    let name = "refusing"
    let stopRequested = Mutex(false)
    private let received = Mutex(false)

    var hasNotification: Bool { received.withLock { $0 } }

    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        received.withLock { $0 = true }
        Task {
            while !stopRequested.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
            try? await Task.sleep(for: .milliseconds(100))
            completion(.abandoned(SinkFailure(.auth, "APNs 403 InvalidProviderToken: credentials refused")))
        }
    }
}

/// Answers every notification as expired before it could be sent.
private final class ExpiringSink: PushSink {
    let kind = "expiring"
    let name = "expiring"

    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        completion(.expired(detail: "not sent by now, after expiresAt"))
    }
}
