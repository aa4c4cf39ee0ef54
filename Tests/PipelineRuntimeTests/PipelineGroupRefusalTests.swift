import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

/// A consumer group that refuses an instance (librdkafka goes on asking, and reports each refusal as an error): the
/// instance used to wait for ever, never ready, logging the refusal. Past `processing.groupRefusalSeconds` it stops
/// instead, saying what to fix; a refusal that ends sooner stops nothing.
@Suite("An instance its consumer group goes on refusing stops, saying why")
struct PipelineGroupRefusalTests {
    @Test(
        "a streaming pipeline its group goes on refusing stops after groupRefusalTimeout with the refusal and what to change",
        .timeLimit(.minutes(3)),
        arguments: [
            // FindCoordinator (API key 10) without Describe on the group, JoinGroup (11) without Read.
            (Int16(10), Int32(30), "GROUP_AUTHORIZATION_FAILED", "the client's principal needs Read and Describe on the group %@"),
            (Int16(11), Int32(30), "GROUP_AUTHORIZATION_FAILED", "the client's principal needs Read and Describe on the group %@"),
            (Int16(11), Int32(26), "INVALID_SESSION_TIMEOUT", "session.timeout.ms in the Kafka properties must lie within"),
            (Int16(11), Int32(23), "INCONSISTENT_GROUP_PROTOCOL", "a member of the group %@ uses another protocol"),
            (Int16(11), Int32(81), "GROUP_MAX_SIZE_REACHED", "the group %@ has as many members as the brokers' group.max.size admits"),
        ]
    )
    func refusedInstanceStops(refusedRequest: Int16, errorCode: Int32, name: String, advice: String) async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let inputs = (0..<5).map { index in
                (key: "user-\(index)", value: JSONValue.object(factory.event(EventFactory.kinds[0], id: "refused-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
            try kafka.failRequests(apiKey: refusedRequest, count: 10_000, errorCode: errorCode)
            var streaming = configuration
            streaming.untilIdle = nil
            streaming.groupRefusalTimeout = .seconds(3)
            let pipeline = CampaignPipeline(configuration: streaming, registry: builtinRegistry, logger: testLogger)
            let started = ContinuousClock.now
            // Before the change the run never ended (the time limit fails it).
            let running = Task { try await pipeline.run() }
            // While the refusal lasts, the instance says so where operators look.
            let reason = try await eventually("not ready because refused", timeout: .seconds(40), every: .milliseconds(50)) { () -> String? in
                guard case .notReady(let reason) = pipeline.status.readiness, reason.contains("refuses") else { return nil }
                return reason
            }
            #expect(reason == "the consumer group refuses this instance (\(name)); it stops unless the group takes it")
            let ending: (any Error)?
            do {
                try await running.value
                ending = nil
            } catch {
                ending = error
            }
            guard let error = ending, case .groupRefused(let group, let reason, let given)? = error as? PipelineRuntimeError else {
                Issue.record("expected the pipeline to stop with groupRefused, got \(ending.map { "\($0)" } ?? "no error")")
                return
            }
            #expect(group == configuration.groupID)
            #expect(reason.contains(name), "\(reason)")
            #expect(given.contains(advice.replacingOccurrences(of: "%@", with: configuration.groupID)), "\(given)")
            #expect("\(error)".contains("the consumer group \(configuration.groupID) refuses this instance"), "\(error)")
            #expect(pipeline.statistics.snapshot.totalIn == 0, "it read nothing")
            let stoppedAfter = ContinuousClock.now - started
            #expect(stoppedAfter >= .seconds(3), "not before the refusal lasted groupRefusalTimeout: \(stoppedAfter)")
            #expect(stoppedAfter < .seconds(60), "stopped soon after it (with the drain's and the close's bounds): \(stoppedAfter)")
        }
    }

    /// ACLs that reach the brokers a moment after the instance starts, a dead member's session that ends: the group
    /// refuses for a while, then takes the instance, which must not stop.
    @Test("a streaming pipeline its group refuses for less than groupRefusalTimeout goes on and processes every event", .timeLimit(.minutes(3)))
    func refusalThatEndsStopsNothing() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let inputs = (0..<5).map { index in
                (key: "user-\(index)", value: JSONValue.object(factory.event(EventFactory.kinds[0], id: "late-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
            // Three joins refused (about a second apart), then the group takes the instance.
            try kafka.failRequests(apiKey: 11, count: 3, errorCode: 30)
            var patient = configuration
            // Longer than the refusals and the group's first join (about 3 + 3 s), shorter than the run (that, then
            // twelve idle seconds): a refusal not ended by the group's assignment would stop it.
            patient.groupRefusalTimeout = .seconds(12)
            patient.untilIdle = .seconds(12)
            let pipeline = CampaignPipeline(configuration: patient, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(pipeline)
            #expect(pipeline.statistics.snapshot.totalIn == 5, "every event read once the group took the instance")
            #expect(pipeline.statistics.outcomeCount == 5)
        }
    }

    @Test("campaign-pipeline run its group goes on refusing exits 1, naming the group, the refusal and what to change", .timeLimit(.minutes(3)))
    func refusedExecutableExits() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            try kafka.failRequests(apiKey: 11, count: 10_000, errorCode: 30)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID().uuidString).json")
            try Data(#"{"processing": {"groupRefusalSeconds": 2}}"#.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await ChildProcess.run(
                executable,
                ["run", "--config", file.path, "--bootstrap-servers", kafka.bootstrapServers, "--group", configuration.groupID],
                environment: childEnvironment(["LOG_LEVEL": "warning"]),
                timeout: .seconds(120)
            )
            #expect(run.status == 1, "\(run.stdout.suffix(2_000)) \(run.stderr.suffix(2_000))")
            #expect(run.stderr.contains("the consumer group \(configuration.groupID) refuses this instance"), "\(run.stderr.suffix(2_000))")
            #expect(run.stderr.contains("GROUP_AUTHORIZATION_FAILED"), "\(run.stderr.suffix(2_000))")
            #expect(run.stderr.contains("Read and Describe on the group \(configuration.groupID)"), "\(run.stderr.suffix(2_000))")
            #expect(run.stderr.contains("stops unless the group takes it within 2 s (processing.groupRefusalSeconds)"), "warned first: \(run.stderr.suffix(2_000))")
            let help = try await ChildProcess.run(executable, ["run", "--help"], environment: childEnvironment())
            let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(words.contains("refusing it (no rights on the group, a session timeout outside the brokers' bounds, …) for"), "\(help.stdout)")
        }
    }
}
