import TestSupport
import Foundation
import KafkaClient
import Logging
import PipelineCore
import Testing

@Suite("The built campaign-pipeline executable")
struct ExecutableTests {
    @Test func rendersEverySample() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let samples = try Paths.samples().map(\.path)
        let result = try await runProcess(executable, ["render"] + samples)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == samples.count)
    }

    @Test func brokenFilesFailWithExitStatus1() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let broken = Paths.brokenFixtures.appendingPathComponent("missing-title.json").path
        let sample = Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-apns.json").path
        let result = try await runProcess(executable, ["render", broken, sample])
        #expect(result.status == 1)
        #expect(result.stderr == "error: broken-missing-title: content.title: required\n")
        #expect(result.stdout.split(separator: "\n").count == 1, "the good file still renders")
        // A pipe is read as a stream, not called a permission problem (Foundation reads regular files only).
        let piped = try await runProcess(executable, ["render", "/dev/stdin"], input: Array(try Data(contentsOf: URL(fileURLWithPath: sample))))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.split(separator: "\n").count == 1, "\(piped.stdout)")
    }

    /// Found by review: a directory was reported as "(NSCocoaErrorDomain error 256.)".
    @Test("a path that is no file of events says what it is, and the others still render")
    func unreadablePathsSayWhy() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let sample = Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-apns.json").path
        let directory = FileManager.default.temporaryDirectory.path
        let result = try await runProcess(executable, ["render", directory, "/nonexistent/events.json", sample])
        #expect(result.status == 1)
        #expect(result.stderr == "error: \(directory): cannot read: a directory, not a file\nerror: /nonexistent/events.json: cannot read: no such file\n")
        #expect(result.stdout.split(separator: "\n").count == 1, "the good file still renders")
        // A pipe is read as a stream, not called a permission problem (Foundation reads regular files only).
        let piped = try await runProcess(executable, ["render", "/dev/stdin"], input: Array(try Data(contentsOf: URL(fileURLWithPath: sample))))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.split(separator: "\n").count == 1, "\(piped.stdout)")
    }

    @Test("render --strict exits 1 when an event rendered with a warning; without it, warnings do not change the status")
    func strictRender() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let sample = try JSONValue(parsing: Array(try Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-apns.json"))))
        let misspelt = sample.setting(["content", "subtitel"], to: "oops").encoded()
        let lenient = try await runProcess(executable, ["render", "-"], input: misspelt)
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stderr.hasSuffix("content.subtitel: not a field of template 'basic'; ignored\n"), "\(lenient.stderr)")
        for arguments in [["render", "--strict", "-"], ["render", "--strict", "--envelope", "-"]] {
            let strict = try await runProcess(executable, arguments, input: misspelt)
            #expect(strict.status == 1, "\(arguments): \(strict.stderr)")
            #expect(strict.stdout.split(separator: "\n").count == 1, "it still renders: \(strict.stdout)")
        }
        let clean = try await runProcess(executable, ["render", "--strict", "-"], input: sample.encoded())
        #expect(clean.status == 0, "\(clean.stderr)")
    }

    @Test func readsStandardInput() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let sample = try Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/carousel-apns.json"))
        let result = try await runProcess(executable, ["render", "--envelope", "-"], input: Array(sample))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(#"{"platform":"apns","messageId":""#))
    }

    @Test("an unknown --log-level is refused with the subcommand's usage, before anything starts")
    func unknownLogLevel() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let result = try await runProcess(executable, ["run", "--log-level", "verbose"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--log-level: 'verbose' is not one of trace, debug"), "\(result.stderr)")
        #expect(result.stderr.contains("Usage: campaign-pipeline run"), "\(result.stderr)")
    }

    @Test("--log-format json writes every log line on standard error as JSON; an unknown format is refused")
    func jsonLogFormat() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        // A broker whose "parent" is not its parent stops at once, after logging that it ran.
        let result = try await runProcess(executable, ["broker", "--parent-pid", "1", "--log-format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        let messages = try lines.map { line in try JSONObject(parsing: Array(line.utf8))["message"]?.stringValue ?? "" }
        #expect(messages.contains("Embedded broker running"), "\(result.stderr)")
        #expect(messages.contains("Embedded broker stopped"), "\(result.stderr)")

        let refused = try await runProcess(executable, ["broker", "--log-format", "yaml"])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("--log-format: 'yaml' is not one of text, json"), "\(refused.stderr)")
        let fromEnvironment = try await runProcess(executable, ["broker", "--parent-pid", "1"], environment: ["LOG_FORMAT": "xml"])
        #expect(fromEnvironment.status != 0)
        #expect(fromEnvironment.stderr.contains("LOG_FORMAT: 'xml' is not one of text, json"), "\(fromEnvironment.stderr)")
    }

    /// A standard error that cannot be written (a full disk, here /dev/full) must cost the log lines, not the
    /// process: `FileHandle.write(_:)` traps on a failed write, where the text format's stdio writes just fail.
    @Test(
        "--log-format json on a standard error that cannot be written: the lines are lost, the process runs on",
        .enabled(if: FileManager.default.isWritableFile(atPath: "/dev/full"))
    )
    func jsonLogsOnAFullDevice() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["broker", "--parent-pid", "1", "--log-format", "json"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        #expect(process.terminationReason == .exit, "ended by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
    }

    /// A default replay writes to the `replay.*` topics. The embedded broker creates any topic a client asks about,
    /// with its own default of 4 partitions, so a replay on the quick start's broker used to create them itself, with
    /// other partitions than the pipeline's, where docker-compose.yml's kafka-init creates them with the rest.
    @Test("broker creates the topics a default replay writes to, with the pipeline's partitions")
    func brokerCreatesTheReplayTopics() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let kcat = try #require(
            ["/usr/bin/kcat", "/usr/local/bin/kcat"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "kcat is not installed: `make test` installs it"
        )
        let address = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: address) }
        // The README's way to start it and wait for its address; the broker stops when the shell ends.
        let script = """
            "$0" broker --log-level warning > "$1" & broker=$!
            for _ in $(seq 300); do [ -s "$1" ] && break; sleep 0.1; done
            "$2" -L -J -b "$(head -1 "$1")"; status=$?
            kill $broker; wait $broker; exit $status
            """
        let result = try await runProcess(URL(fileURLWithPath: "/bin/bash"), ["-c", script, executable.path, address, kcat])
        #expect(result.status == 0, "\(result.stderr)")
        let metadata = try JSONObject(parsing: Array(result.stdout.utf8))
        var partitions: [String: Int] = [:]
        for topic in metadata["topics"]?.arrayValue ?? [] {
            guard let name = topic.objectValue?["topic"]?.stringValue else { continue }
            partitions[name] = topic.objectValue?["partitions"]?.arrayValue?.count
        }
        for name in ["replay.push.fcm", "replay.push.apns", "replay.campaign.analytics", "replay.campaign.dlq"] {
            #expect(partitions[name] == 6, "\(name): \(partitions)")
        }
        #expect(partitions["campaign.sends"] == 6, "\(partitions)")
    }

    @Test("broker --topic with an empty name is refused with the usage, before a broker starts")
    func emptyBrokerTopic() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        for spec in ["", ":3"] {
            let result = try await runProcess(executable, ["broker", "--parent-pid", "1", "--topic", spec])  // exits at once if it starts
            #expect(result.status == 64, "\(spec): \(result.stderr)")
            #expect(result.stderr.contains("--topic"), "\(result.stderr)")
        }
    }

    /// The file named by CAMPAIGN_PIPELINE_CONFIG was reported as "--config", a flag the user never gave, and a syntax
    /// error by its byte offset only, in a file people edit by line.
    @Test("a configuration file that cannot be used is reported with where its path came from, and a syntax error with its line")
    func configurationFileErrorsSayWhere() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let missing = try await runProcess(executable, ["run", "--print-config"], environment: ["CAMPAIGN_PIPELINE_CONFIG": "/nonexistent/pipeline.json"])
        #expect(missing.status == 78, "a setting it cannot use: \(missing.stderr)")
        #expect(missing.stderr.contains("CAMPAIGN_PIPELINE_CONFIG: cannot read the file '/nonexistent/pipeline.json': no such file"), "\(missing.stderr)")
        // Empty is unset, as for every other variable (it was read as a file named '').
        let empty = try await runProcess(executable, ["run", "--print-config", "--bootstrap-servers", "a:1"], environment: ["CAMPAIGN_PIPELINE_CONFIG": ""])
        #expect(empty.status == 0, "\(empty.stderr)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("broken-config-\(UUID().uuidString).json")
        try Data("{\n  \"kafka\": {\n    \"bootstrapServers\": \"a:1\",,\n  }\n}\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let broken = try await runProcess(executable, ["run", "--print-config", "--config", file.path])
        #expect(broken.status == 78)
        #expect(broken.stderr.contains("--config: '\(file.path)' is not valid JSON"), "\(broken.stderr)")
        // A key of the file that is refused names the file; a variable refused beside it does not.
        try Data(#"{"kafka": {"groupID": "g"}}"#.utf8).write(to: file)
        let misspelt = try await runProcess(executable, ["run", "--print-config"], environment: ["CAMPAIGN_PIPELINE_CONFIG": file.path])
        #expect(misspelt.status == 78)
        #expect(misspelt.stderr.contains("configuration: kafka.groupID (in CAMPAIGN_PIPELINE_CONFIG '\(file.path)'): unknown key"), "\(misspelt.stderr)")
        try Data(#"{"kafka": {"groupId": "g"}}"#.utf8).write(to: file)
        let variable = try await runProcess(executable, ["run", "--print-config", "--config", file.path], environment: ["CAMPAIGN_PIPELINE_GROUPID": "g"])
        #expect(variable.status == 78)
        #expect(variable.stderr.contains("configuration: CAMPAIGN_PIPELINE_GROUPID: unknown variable"), "\(variable.stderr)")
        #expect(broken.stderr.contains("line 3, column 31"), "\(broken.stderr)")
    }

    @Test("an empty --group is refused with the subcommand's usage, before anything starts")
    func emptyGroup() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let result = try await runProcess(executable, ["run", "--bootstrap-servers", "127.0.0.1:1", "--group", ""])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--group must not be empty"), "\(result.stderr)")
    }

    /// A number of seconds is parsed as a `Double`, which also reads `nan`, `inf` and `1e300`: converted to
    /// milliseconds they trapped ("Double value cannot be converted to Int64"), killing the process with SIGILL.
    /// `-3` was taken for an option: "Missing value for '--until-idle <seconds>'" (an operator's trial).
    @Test("a number of seconds that is not finite, too large or negative is refused naming the option", arguments: ["nan", "inf", "1e300", "0", "-3"])
    func secondsAreChecked(_ value: String) async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        for arguments in [
            ["run", "--bootstrap-servers", "127.0.0.1:1", "--print-config", "--until-idle", value],
            ["probe", "--port", "1", "--timeout", value],
            ["demo", "--config-directory", "/nonexistent", "--idle", value],
        ] {
            let option = arguments[arguments.count - 2]
            let result = try await runProcess(executable, arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr.prefix(300))")
            #expect(result.stderr.contains("\(option) must be a positive number of seconds"), "\(arguments): \(result.stderr.prefix(300))")
        }
    }

    /// The README's check before a run: it used to pass (exit 0) a configuration the run then refused. A refused
    /// setting other than the brokers printed the configuration first, so `--print-config > effective.json` left a
    /// file that looked good; a misspelt Kafka property or a value librdkafka does not take passed.
    @Test("--print-config fails, as run would, on no bootstrap servers, a bad log or metrics setting, or a Kafka property librdkafka refuses")
    func printConfigChecksTheBrokers() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let missing = try await runProcess(executable, ["run", "--print-config"], environment: ["CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS": ""])
        #expect(missing.status == 78, "\(missing.stderr)")
        #expect(missing.stdout.contains("\"bootstrapServers\""), "printed first: \(missing.stdout)")
        #expect(missing.stderr.contains("no Kafka bootstrap servers configured"), "\(missing.stderr)")
        let given = try await runProcess(executable, ["run", "--print-config", "--bootstrap-servers", "127.0.0.1:1"])
        #expect(given.status == 0, "\(given.stderr)")
        // The settings read outside the configuration too, and the Kafka properties: each used to pass here and fail
        // the run. Nothing is printed for them.
        for (variable, value, complaint) in [
            ("LOG_LEVEL", "verbose", "LOG_LEVEL: 'verbose' is not one of"),
            ("LOG_FORMAT", "xml", "LOG_FORMAT: 'xml' is not one of"),
            ("CAMPAIGN_PIPELINE_METRICS_PORT", "abc", "CAMPAIGN_PIPELINE_METRICS_PORT: expected a port number"),
            (
                "CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCL", "ssl",
                "configuration: CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCL: property 'security.protocl' (value not shown): No such configuration property"
            ),
            ("CAMPAIGN_PIPELINE_KAFKA_SESSION_TIMEOUT_MS", "abc", "CAMPAIGN_PIPELINE_KAFKA_SESSION_TIMEOUT_MS: property 'session.timeout.ms' (value not shown)"),
            ("CAMPAIGN_PIPELINE_KAFKA_ACKS", "1", "configuration: kafka: librdkafka refuses the producers' properties: "),
        ] {
            let refused = try await runProcess(executable, ["run", "--print-config", "--bootstrap-servers", "127.0.0.1:1"], environment: [variable: value])
            #expect(refused.status == 78, "\(variable)=\(value): \(refused.stderr)")
            #expect(refused.stderr.contains(complaint), "\(variable)=\(value): \(refused.stderr)")
            #expect(refused.stdout.isEmpty, "\(variable)=\(value): \(refused.stdout)")
        }
        // A Kubernetes Service named campaign-pipeline-metrics replaces the image's CAMPAIGN_PIPELINE_METRICS_PORT with
        // tcp://…: refused (ignored, the health endpoints would be off without a word), saying what set it. Its other
        // service-link variables are not ours, and pass.
        let arguments = ["run", "--print-config", "--bootstrap-servers", "127.0.0.1:1"]
        let links = ["CAMPAIGN_PIPELINE_METRICS_SERVICE_HOST": "10.96.0.12", "CAMPAIGN_PIPELINE_METRICS_PORT_9464_TCP": "tcp://10.96.0.12:9464"]
        let linked = try await runProcess(executable, arguments, environment: links.merging(["CAMPAIGN_PIPELINE_METRICS_PORT": "tcp://10.96.0.12:9464"]) { $1 })
        #expect(linked.status == 78, "\(linked.stderr)")
        #expect(linked.stderr.contains("Kubernetes sets this for a Service named campaign-pipeline-metrics"), "\(linked.stderr)")
        #expect(linked.stdout.isEmpty, "\(linked.stdout)")
        let served = try await runProcess(executable, arguments, environment: links.merging(["CAMPAIGN_PIPELINE_METRICS_PORT": "9464"]) { $1 })
        #expect(served.status == 0, "\(served.stderr)")
    }

    /// A setting found unusable only as the run starts (a sink's key file) ends it as a configuration error too: the
    /// status tells a supervisor or job "fix the configuration", not "retry" (1) or "the cluster is away" (69).
    @Test("a sink's key file that cannot be read ends run with status 78, saying why")
    func unreadableCredentialsAtStart() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let (kafka, _) = try await clusterWithSamples(logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        defer { kafka.shutdown() }
        let result = try await runProcess(
            executable,
            ["run", "--bootstrap-servers", kafka.bootstrapServers, "--until-idle", "2", "--log-level", "warning"],
            environment: ["CAMPAIGN_PIPELINE_SINKS_FCM": "fcm", "CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT_FILE": "/nonexistent/key.json"]
        )
        #expect(result.status == 78, "\(result.stderr.suffix(2_000))")
        #expect(result.stderr.contains("configuration: fcm.serviceAccountFile: cannot read the file '/nonexistent/key.json': no such file"), "\(result.stderr.suffix(2_000))")
    }

    /// `=x` passed the check (which split keeping the empty name) and was then read as the property `x`. `-1` was taken
    /// for an option: "Missing value for '--metrics-port <port>'" (a user's trial).
    @Test(
        "a --kafka-property without a name, and a negative --metrics-port, are refused naming the option",
        arguments: [
            ("--kafka-property", "=lz4", "--kafka-property '=lz4': expected name=value"),
            ("--metrics-port", "-1", "--metrics-port must be 0 to 65535, not -1"),
            ("--port", "-1", "--port must be 1 to 65535, not -1"),
        ]
    )
    func optionValuesAreChecked(option: String, value: String, complaint: String) async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let command = option == "--port" ? ["probe"] : ["run", "--bootstrap-servers", "127.0.0.1:1", "--print-config"]
        let result = try await runProcess(executable, command + [option, value])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(complaint), "\(result.stderr)")
    }

    @Test func listsTemplates() async throws {
        let executable = try #require(Paths.executable, "campaign-pipeline was not found next to the test bundle")
        let result = try await runProcess(executable, ["templates"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("carousel (aliases: car)"))
        #expect(result.stdout.contains("alternate.title"))

        // One template, by an alias; as JSON.
        let one = try await runProcess(executable, ["templates", "car", "--json"])
        #expect(one.status == 0, "\(one.stderr)")
        let listing = try JSONValue(parsing: Array(one.stdout.utf8))
        let templates = try #require(listing.objectValue?["templates"]?.arrayValue)
        #expect(templates.map { $0.objectValue?["id"] } == ["carousel"])
        #expect(templates.first?.objectValue?["aliases"] == ["car"])
        let items = templates.first?.objectValue?["fields"]?.arrayValue?.first { $0.objectValue?["name"] == "items[]" }
        #expect(items?.objectValue?["requiredOn"] == ["fcm", "apns"])
        #expect(listing.objectValue?["overrides"] == nil)
        let timer = try await runProcess(executable, ["templates", "timer"])
        #expect(timer.stdout.hasPrefix("timer\n") && !timer.stdout.contains("\ncarousel"), "\(timer.stdout)")

        let unknown = try await runProcess(executable, ["templates", "banner"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown template 'banner'; known: basic, carousel (car), timer"), "\(unknown.stderr)")
    }
}
