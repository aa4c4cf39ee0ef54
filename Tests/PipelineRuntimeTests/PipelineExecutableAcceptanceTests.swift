import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

// The acceptance tests that run the built `campaign-pipeline` executable as a child process (part of the
// serialized acceptance suite).
extension PipelineAcceptanceTests {
    // MARK: - 7. Crash safety

    @Test("campaign-pipeline run killed with SIGKILL three times, then run to the end, loses no event")
    func killingTheExecutableLosesNothing() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withPipelineCluster(partitions: 12) { kafka, configuration in
            let factory = try EventFactory()
            let total = Int(ProcessInfo.processInfo.environment["PIPELINE_CRASH_TEST_EVENTS"] ?? "20000")!
            let eventIds = (0..<total).map { "crash-\($0)" }
            // Every seventh event expires at an instant spread over the next minute, so that some are read before
            // their expiry, lost to a kill before their commit and read again after it: they must be judged as at
            // their first reading (the outcome they had), not sent once and expired the next time.
            let expiriesFrom = Date().timeIntervalSince1970 + 5
            try await produce(
                eventIds.enumerated().map { index, id in
                    let recipient = "user-\(index % 500)"
                    let kind = EventFactory.kinds[index % EventFactory.kinds.count]
                    var event = factory.event(kind, id: id, recipient: recipient)
                    if index % 7 == 0 {
                        let expiresAt = Timestamp(secondsSince1970: Int64(expiriesFrom + 60 * Double(index) / Double(total)))
                        event = event.setting(["expiresAt"], to: .string(expiresAt.rfc3339))
                    }
                    return (recipient, JSONValue.object(event).encoded())
                },
                to: configuration.topics.sends,
                kafka: kafka
            )

            // A killed instance stays in the group until its session times out; a short timeout keeps each
            // restart's rebalance short.
            let settings = FileManager.default.temporaryDirectory.appendingPathComponent("crash-test-\(UUID().uuidString).json")
            try Data(#"{"kafka": {"consumerProperties": {"session.timeout.ms": "3000", "heartbeat.interval.ms": "300"}}}"#.utf8)
                .write(to: settings)
            defer { try? FileManager.default.removeItem(at: settings) }
            let arguments = [
                "run", "--bootstrap-servers", kafka.bootstrapServers, "--group", configuration.groupID, "--until-idle", "3",
                "--config", settings.path,
            ]
            let environment = childEnvironment(["LOG_LEVEL": "warning"])

            let seed = UInt64(ProcessInfo.processInfo.environment["PIPELINE_CRASH_TEST_SEED"] ?? "") ?? 20_261_122
            var random = AcceptanceRandom(seed: seed)
            var log: [String] = []
            let started = ContinuousClock.now
            for round in 1...3 {
                let child = try ChildProcess(executable, arguments, environment: environment, name: "killed-\(round)")
                // Kill it at a random point while it processes: once it has written outputs, after a random delay.
                let before = try await recordCount(configuration.topics.analytics, kafka: kafka)
                try await eventually("round \(round)'s child to start writing outputs", timeout: .seconds(40)) {
                    if !child.process.isRunning { return true }
                    return try await recordCount(configuration.topics.analytics, kafka: kafka) > before ? true : nil
                }
                let delay = Double.random(in: 0.1...1.5, using: &random)
                try await Task.sleep(for: .seconds(delay))
                let wasRunning = child.process.isRunning
                child.killHard()
                let status = try await child.waitForExit(timeout: .seconds(10))
                if wasRunning {
                    #expect(child.process.terminationReason == .uncaughtSignal, "round \(round): killed by SIGKILL")
                } else {
                    // It finished before the kill: then it must have succeeded.
                    #expect(status == 0, "round \(round) (seed \(seed)) exited early with \(status):\n\(child.stderrTail())")
                }
                let outcomes = try await recordCount(configuration.topics.analytics, kafka: kafka)
                log.append(
                    "round \(round): \(wasRunning ? "killed" : "had exited") \(String(format: "%.1f", delay)) s into processing "
                        + "(at \(ContinuousClock.now - started)), \(outcomes) analytics so far"
                )
            }

            let final = try ChildProcess(executable, arguments, environment: environment, name: "final")
            let finalStarted = ContinuousClock.now
            let status = try await final.waitForExit(timeout: .seconds(90))
            log.append("final run took \(ContinuousClock.now - finalStarted)")
            #expect(status == 0, "the final run must exit 0 (seed \(seed)); stderr:\n\(final.stderrTail())")

            let events = try await analyticsRecords(configuration, kafka: kafka).map(\.event)
            let expired = events.filter { $0.kind == .expired && $0.cause == .ttl }.count
            print("crash test (seed \(seed)): " + log.joined(separator: "; ") + "; final: \(events.count) analytics for \(total) events, \(expired) expired unsent")
            try expectEveryEventHasATerminalOutcome(events, eventIds: eventIds)
            if events.filter(\.isTerminal).count < total {
                Issue.record("final run's stderr:\n\(final.stderrTail())")
            }
        }
    }

    // MARK: - 8. Configuration

    @Test("configuration: file values, environment overrides, unknown keys named, secrets masked; run explains what is missing")
    func configurationIsLayeredValidatedAndMasked() async throws {
        let file = try #require(
            try JSONValue(
                parsing: Array(
                    #"""
                    {
                      "$comment": "test",
                      "kafka": {
                        "bootstrapServers": "file-a:9092, file-b:9092",
                        "groupId": "file-group",
                        "properties": {"security.protocol": "SASL_SSL", "sasl.username": "pipeline", "sasl.password": "from-file"},
                        "consumerProperties": {"session.timeout.ms": 6000}
                      },
                      "topics": {"sends": "custom.sends", "timers": "custom.timers"},
                      "processing": {"maxInFlightPerPartition": 100, "drainTimeoutSeconds": 3}
                    }
                    """#.utf8
                )
            ).objectValue
        )

        // The file alone.
        let fromFile = try PipelineConfiguration.load(file: file, environment: [:])
        #expect(fromFile.bootstrapServers == ["file-a:9092", "file-b:9092"])
        #expect(fromFile.groupID == "file-group")
        #expect(fromFile.kafkaProperties == ["security.protocol": "SASL_SSL", "sasl.username": "pipeline", "sasl.password": "from-file"])
        #expect(fromFile.consumerProperties == ["session.timeout.ms": "6000"])
        #expect(fromFile.topics.sends == "custom.sends" && fromFile.topics.timers == "custom.timers")
        #expect(fromFile.topics.analytics == PipelineConfiguration.Topics().analytics, "unset topics keep their defaults")
        #expect(fromFile.maxInFlightPerPartition == 100)
        #expect(fromFile.drainTimeout == .seconds(3))

        // The environment overrides the file.
        let environment = [
            "CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS": "env-a:9092,env-b:9093",
            "CAMPAIGN_PIPELINE_GROUP": "env-group",
            "CAMPAIGN_PIPELINE_KAFKA_SASL_PASSWORD": "from-env",
            "PATH": "/usr/bin",
            "KAFKA_HOME": "/opt/kafka",
        ]
        let overridden = try PipelineConfiguration.load(file: file, environment: environment)
        #expect(overridden.bootstrapServers == ["env-a:9092", "env-b:9093"])
        #expect(overridden.groupID == "env-group")
        #expect(overridden.kafkaProperties["sasl.password"] == "from-env")
        #expect(overridden.kafkaProperties["security.protocol"] == "SASL_SSL", "file properties the environment does not set stay")
        #expect(overridden.kafkaProperties["path"] == nil, "only CAMPAIGN_PIPELINE_KAFKA_ variables become properties")
        #expect(!overridden.kafkaProperties.keys.contains { $0.contains("home") }, "a container's KAFKA_HOME is not a property")
        let defaults = try PipelineConfiguration.load(file: nil, environment: ["CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS": "only:1"])
        #expect(defaults.bootstrapServers == ["only:1"] && defaults.groupID == "campaign-pipeline")

        // Unknown keys are named.
        let unknown: [(json: String, key: String)] = [
            (#"{"kafka": {"bootstrapServer": "x:1"}}"#, "kafka.bootstrapServer"),
            (#"{"topics": {"payments": "x"}}"#, "topics.payments"),
            (#"{"processing": {"maxInflight": 5}}"#, "processing.maxInflight"),
            (#"{"kafak": {}}"#, "kafak"),
        ]
        for (json, key) in unknown {
            let object = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
            let error = #expect(throws: ConfigurationError.self, "\(json)") {
                try PipelineConfiguration.load(file: object, environment: [:])
            }
            #expect(error?.key == key, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
            #expect(error?.description.contains(key) == true)
        }

        // Secrets are masked in the description.
        var secret = overridden
        secret.producerProperties["ssl.key.password"] = "key-secret"
        let described = secret.describedAsJSON()
        let text = String(decoding: described.encoded(), as: UTF8.self)
        #expect(described.objectValue?["kafka"]?.objectValue?["properties"]?.objectValue?["sasl.password"]?.stringValue == "****")
        #expect(described.objectValue?["kafka"]?.objectValue?["properties"]?.objectValue?["sasl.username"]?.stringValue == "pipeline")
        #expect(!text.contains("from-env") && !text.contains("from-file") && !text.contains("key-secret"), "\(text)")
        #expect(text.contains("env-a:9092,env-b:9093") && text.contains("env-group"))

        // The executable: no brokers is an error that says how to try it; --print-config masks secrets.
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        let missing = try await ChildProcess.run(executable, ["run"], environment: childEnvironment())
        #expect(missing.status != 0, "run without brokers must fail")
        #expect(missing.stderr.contains("make run"), "stderr: \(missing.stderr)")
        #expect(missing.stderr.contains("bootstrap"), "stderr: \(missing.stderr)")

        let printed = try await ChildProcess.run(
            executable,
            ["run", "--print-config", "--bootstrap-servers", "x:1", "--kafka-property", "sasl.password=hunter2"],
            environment: childEnvironment()
        )
        #expect(printed.status == 0, "stderr: \(printed.stderr)")
        #expect(printed.stdout.contains("****"), "\(printed.stdout)")
        #expect(!printed.stdout.contains("hunter2") && !printed.stderr.contains("hunter2"))
        let json = try JSONValue(parsing: Array(printed.stdout.utf8))
        #expect(json.objectValue?["kafka"]?.objectValue?["bootstrapServers"]?.stringValue == "x:1")
        #expect(json.objectValue?["kafka"]?.objectValue?["properties"]?.objectValue?["sasl.password"]?.stringValue == "****")
    }

    /// The configuration the image and docker-compose use, run as shipped: an operator's trial found every start logging
    /// librdkafka warnings (a producer's property set for every client, which each consumer said it ignores).
    @Test("Config/pipeline.json runs on a cluster without a warning")
    func shippedConfigurationRunsCleanly() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
            let shipped = repositoryRoot.appendingPathComponent("Config/pipeline.json").path
            let result = try await ChildProcess.run(
                executable,
                ["run", "--config", shipped, "--bootstrap-servers", kafka.bootstrapServers, "--group", configuration.groupID, "--until-idle", "1"],
                environment: childEnvironment(["LOG_LEVEL": "warning"])
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.isEmpty, "warnings of a clean start: \(result.stderr)")
        }
    }
}
