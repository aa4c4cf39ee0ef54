import Foundation
import TestSupport
import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Helpers of the acceptance tests: polling with deadlines, running a pipeline in the background, building
// events, and running the built `campaign-pipeline` executable as a child process.

/// How long a test waits for something the embedded cluster does (a group join, deliveries, a restart). Generous:
/// `make test` runs the suites in parallel on two cores, where a first group join has taken up to ~30 s (about 3 s
/// alone); the tests check what happens, not how fast.
let clusterTimeout: Duration = .seconds(90)

/// Polls `probe` until it returns a value, failing with `what` when `timeout` passes first.
@discardableResult
func eventually<T>(
    _ what: String,
    timeout: Duration,
    every interval: Duration = .milliseconds(250),
    _ probe: () async throws -> T?
) async throws -> T {
    let start = ContinuousClock.now
    while true {
        if let value = try await probe() { return value }
        if ContinuousClock.now - start >= timeout {
            throw TestFailure(description: "timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: interval)
    }
}

/// Runs `pipeline` in the background while `body` runs, then stops it and waits for ``CampaignPipeline/run()``
/// to return (rethrowing its error). The pipeline is stopped on every path, so a failing body does not hang.
func whileRunning<T>(_ pipeline: CampaignPipeline, _ body: () async throws -> T) async throws -> T {
    let running = Task { try await pipeline.run() }
    let result: T
    do {
        result = try await body()
    } catch {
        pipeline.stop()
        _ = try? await running.value
        throw error
    }
    pipeline.stop()
    try await running.value
    return result
}

/// Runs a pipeline configured with ``PipelineConfiguration/untilIdle`` until it stops by itself, failing (after
/// stopping it) when that takes longer than `timeout`, so a pipeline that never becomes idle cannot hang the tests.
func runUntilIdle(_ pipeline: CampaignPipeline, timeout: Duration = .seconds(60)) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            try await pipeline.run()
            return true
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let finished = try await group.next() ?? false
        group.cancelAll()
        if !finished {
            pipeline.stop()
            _ = try await group.next()
            throw TestFailure(description: "the pipeline did not become idle and stop within \(timeout)")
        }
    }
}

/// The analytics events currently on the analytics topic, with their partition and offset.
struct AnalyticsRecord {
    var event: AnalyticsEvent
    var partition: Int32
    var offset: Int64
}

func analyticsRecords(_ configuration: PipelineConfiguration, kafka: EmbeddedKafka) async throws -> [AnalyticsRecord] {
    try await readAll(configuration.topics.analytics, kafka: kafka).map {
        AnalyticsRecord(event: try AnalyticsEvent(json: $0.value ?? []), partition: $0.partition, offset: $0.offset)
    }
}

extension AnalyticsEvent {
    /// Whether this is the one terminal outcome of an input (a timer's expiry after delivery is not one).
    var isTerminal: Bool { !(kind == .expired && cause == .timer) }
}

/// Expects `count` events with exactly one outcome each among `outcomes` (terminal outcomes, by event id).
func expectOneOutcomeEach(_ outcomes: [AnalyticsEvent], count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let byEvent = Dictionary(grouping: outcomes, by: { $0.identity.eventId ?? "" })
    #expect(byEvent.count == count, "every event has an outcome", sourceLocation: sourceLocation)
    #expect(byEvent.values.allSatisfy { $0.count == 1 }, "exactly one each", sourceLocation: sourceLocation)
}

extension Timestamp {
    /// Seconds since 1970 as a floating-point number, for comparisons with a tolerance.
    var seconds: Double { Double(secondsSince1970) + Double(nanoseconds) / 1_000_000_000 }

    /// The timestamp of a `Date`.
    init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        let whole = interval.rounded(.down)
        self.init(secondsSince1970: Int64(whole), nanoseconds: Int32((interval - whole) * 1_000_000_000))
    }
}

extension JSONObject {
    /// A copy with the value at `path` (object keys) replaced; `nil` removes it.
    func setting(_ path: [String], to value: JSONValue?) -> JSONObject {
        var copy = self
        guard let first = path.first else { return copy }
        if path.count == 1 {
            copy[first] = value
        } else {
            let inner = copy[first]?.objectValue ?? JSONObject()
            copy[first] = .object(inner.setting(Array(path.dropFirst()), to: value))
        }
        return copy
    }
}

extension KafkaConsumerMessage {
    /// The value as a JSON object (payload records).
    var jsonObject: JSONObject? { (try? JSONValue(parsing: value ?? []))?.objectValue }
}

/// A small deterministic random generator (SplitMix64), so a failing run can be repeated.
struct AcceptanceRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: - The built executable

/// The `campaign-pipeline` executable, if it was built.
var pipelineExecutable: URL? { campaignPipelineExecutable }

/// The environment for a child `campaign-pipeline`: this process's, without any pipeline or Kafka settings
/// (so the developer's shell cannot change what the test runs), plus `extra`.
func childEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { name, _ in
        !name.hasPrefix("CAMPAIGN_PIPELINE_") && !name.hasPrefix(PipelineConfiguration.EnvironmentKey.kafkaPropertyPrefix)
            && name != "LOG_LEVEL"
    }
    environment.merge(extra) { $1 }
    return environment
}

/// A child process whose output goes to files (no pipe can fill up and block it).
final class ChildProcess {
    let process = Process()
    let directory: URL
    private let stdoutURL: URL
    private let stderrURL: URL

    /// Starts `executable` with `arguments`.
    init(_ executable: URL, _ arguments: [String], environment: [String: String], name: String = "child") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-acceptance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("\(name).stdout")
        stderrURL = directory.appendingPathComponent("\(name).stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// The last `count` characters of standard error, for failure messages.
    func stderrTail(_ count: Int = 4_000) -> String { String(stderr.suffix(count)) }

    /// Kills it with SIGKILL (no chance to drain or commit).
    func killHard() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits for the process to end, polling; throws (after killing it) when `timeout` passes first.
    @discardableResult
    func waitForExit(timeout: Duration) async throws -> Int32 {
        let start = ContinuousClock.now
        while process.isRunning {
            if ContinuousClock.now - start >= timeout {
                killHard()
                throw TestFailure(description: "the child did not exit within \(timeout); stderr:\n\(stderrTail())")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Runs to completion and returns exit status, stdout and stderr.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String],
        timeout: Duration = .seconds(30)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(executable, arguments, environment: environment)
        let status = try await child.waitForExit(timeout: timeout)
        return (status, child.stdout, child.stderr)
    }
}

/// The number of records ever written to a topic (the sum of its partitions' high watermarks), without reading them.
func recordCount(_ topic: String, kafka: EmbeddedKafka) async throws -> Int64 {
    let consumer = try KafkaConsumer(
        configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil),
        logger: testLogger
    )
    do {
        var total: Int64 = 0
        for partition in 0..<(try await consumer.partitionCount(topic: topic)) {
            total += try await consumer.watermarks(topic: topic, partition: partition).high
        }
        await consumer.close()
        return total
    } catch {
        await consumer.close()
        throw error
    }
}
