import Foundation
import KafkaClient
import Logging
import TestSupport
@testable import CampaignPipelineCLI
import PipelineCore

/// Paths of the repository, the broken fixtures and the built executable.
enum Paths {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Broken events; outside the test target's folder so SwiftPM does not treat them as resources.
    static let brokenFixtures = repositoryRoot.appendingPathComponent("Tests/Fixtures/broken")

    static func samples() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(
            at: repositoryRoot.appendingPathComponent("Config/samples"),
            includingPropertiesForKeys: nil
        ).filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// The built `campaign-pipeline` executable, if it was built.
    static var executable: URL? { campaignPipelineExecutable }
}

/// What one run of ``RenderRunner`` wrote.
struct Captured {
    var stdout: [String] = []
    var stderr: [String] = []
    var summary = RenderRunner.Summary()
}

extension RenderRunner {
    /// Runs over `input` and captures both streams.
    func capture(_ input: [UInt8], source: String = "test") -> Captured {
        var captured = Captured()
        captured.summary = run(
            input: input,
            source: source,
            output: { captured.stdout.append($0) },
            diagnostics: { captured.stderr.append($0) }
        )
        return captured
    }
}

/// The result of running the built executable.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable` with `arguments`, feeding `input` on standard input, with `environment` added to this
/// process's. The blocking reads and the wait run on a thread of their own. Not on a dispatch queue: on Linux the
/// global queues and Swift's cooperative pool share one pool of threads, which grows by about one thread a second
/// while its threads are blocked, so a few dozen children at once (the parallel test run) held every other test's
/// tasks back for a minute.
func runProcess(_ executable: URL, _ arguments: [String], input: [UInt8] = [], environment: [String: String] = [:]) async throws -> ProcessResult {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runProcessBlocking(executable, arguments, input: input, environment: environment) })
        }
    }
}

private func runProcessBlocking(_ executable: URL, _ arguments: [String], input: [UInt8], environment: [String: String]) throws -> ProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus,
        stdout: String(decoding: out, as: UTF8.self),
        stderr: String(decoding: err, as: UTF8.self)
    )
}

/// An embedded one-broker cluster with the pipeline's topics (and `extraTopics`), two partitions each, and the
/// sample events (`Config/samples`) on `campaign.sends`; returns it and the number of samples. Shut it down after.
func clusterWithSamples(extraTopics: [String] = [], logger: Logger) async throws -> (kafka: EmbeddedKafka, samples: Int) {
    let kafka = try EmbeddedKafka(brokers: 1, logger: logger)
    do {
        let topics = ["campaign.sends", "campaign.definitions", "push.fcm", "push.apns", "campaign.analytics", "campaign.dlq", "campaign.timers", "campaign.tokens"]
        for topic in topics + extraTopics { try kafka.createTopic(topic, partitions: 2) }
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: logger)
        let samples = try Paths.samples().map { try JSONValue(parsing: Array(Data(contentsOf: $0))).encoded() }
        for result in await producer.send(contentsOf: samples.map { KafkaProducerRecord(topic: "campaign.sends", value: $0) }) {
            _ = try result.get()
        }
        await producer.close()
        return (kafka, samples.count)
    } catch {
        kafka.shutdown()
        throw error
    }
}

/// Starts the executable with `arguments`, its standard error going to a new log file (removed by the caller).
func launchLogged(_ executable: URL, _ arguments: [String], logName: String) throws -> (process: Process, log: URL) {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(logName)-\(UUID().uuidString).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: log)
    try process.run()
    return (process, log)
}
