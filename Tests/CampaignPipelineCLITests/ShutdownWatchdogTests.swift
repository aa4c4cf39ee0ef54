@testable import CampaignPipelineCLI
import Foundation
import KafkaClient
import Logging
import Synchronization
import Testing

@Suite("A shutdown is bounded: by its limit, and by a second signal")
struct ShutdownWatchdogTests {
    /// The statuses the watchdog exited with, and when.
    final class Exits: Sendable {
        let statuses = Mutex<[(status: Int32, at: ContinuousClock.Instant)]>([])
        func record(_ status: Int32) { statuses.withLock { $0.append((status, .now)) } }
    }

    static let logger = Logger(label: "watchdog-tests") { _ in SwiftLogNoOpLogHandler() }

    @Test("a second signal exits at once with status 1")
    func secondSignalExits() throws {
        let exits = Exits()
        let watchdog = ShutdownWatchdog(limit: .seconds(600), logger: Self.logger, exit: { exits.record($0) })
        watchdog.signalled("SIGTERM")
        #expect(exits.statuses.withLock { $0.isEmpty }, "the first signal only starts the graceful shutdown")
        watchdog.signalled("SIGINT")
        #expect(exits.statuses.withLock { $0.map(\.status) } == [1])
    }

    @Test("a shutdown still going once its limit has passed since the first signal exits with status 1")
    func limitExits() async throws {
        let exits = Exits()
        let watchdog = ShutdownWatchdog(limit: .milliseconds(300), logger: Self.logger, exit: { exits.record($0) })
        try await Task.sleep(for: .milliseconds(500))
        #expect(exits.statuses.withLock { $0.isEmpty }, "nothing before a signal")
        let signalled = ContinuousClock.now
        watchdog.signalled("SIGTERM")
        let deadline = ContinuousClock.now + .seconds(30)
        while exits.statuses.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let exit = try #require(exits.statuses.withLock { $0.first })
        #expect(exit.status == 1)
        #expect(exit.at - signalled >= .milliseconds(300), "not before the limit")
    }

    /// The watchdog follows the process's real signals. The payload topics have no leader, so the sends read stay in
    /// flight and the drain after SIGTERM waits for them (up to its 15 s timeout); the SIGINT sent once the shutdown
    /// has begun ends `run` at once with status 1. Without payload topics to wait on, one SIGTERM drains and exits 0
    /// within milliseconds, before a second signal could be sent.
    @Test("run: a second signal during the shutdown ends the process at once with status 1")
    func secondSignalEndsRun() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let (kafka, _) = try await clusterWithSamples(logger: Self.logger)
        defer { kafka.shutdown() }
        for topic in ["push.fcm", "push.apns"] {
            for partition: Int32 in 0..<2 { try kafka.setLeader(of: topic, partition: partition, to: nil) }
        }
        let group = "watchdog-\(UUID().uuidString.prefix(8))"
        let (process, log) = try launchLogged(executable, ["run", "--bootstrap-servers", kafka.bootstrapServers, "--group", group], logName: "watchdog-run")
        defer { try? FileManager.default.removeItem(at: log) }
        defer { if process.isRunning { process.terminate() } }
        func logText() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        for _ in 0..<600 where !logText().contains("Assigned") { try await Task.sleep(for: .milliseconds(50)) }
        #expect(logText().contains("Assigned"), "\(logText())")
        // Time to read the samples, whose payloads then wait for a leader.
        try await Task.sleep(for: .seconds(2))

        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<200 where !logText().contains("Shutdown requested") { try await Task.sleep(for: .milliseconds(50)) }
        try #require(process.isRunning, "the drain waits for the payloads in flight: \(logText())")
        let signalled = ContinuousClock.now
        kill(process.processIdentifier, SIGINT)
        for _ in 0..<600 where process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!process.isRunning)
        #expect(ContinuousClock.now - signalled < .seconds(10), "at once, not after the 15 s drain timeout")
        #expect(process.terminationStatus == 1, "\(logText())")
        #expect(logText().contains("Second signal (SIGINT) during shutdown"), "\(logText())")
        #expect(!logText().contains("Drained in-flight work"), "\(logText())")
    }
}
