import AsyncHTTPClient
@testable import CampaignPipelineCLI
import Foundation
import KafkaClient
import Logging
import MetricsEndpoint
import NIOCore
import NIOHTTP1
import PipelineCore
import PipelineRuntime
import ServiceLifecycle
import Synchronization
import Testing

@Suite("campaign-pipeline run --metrics-port")
struct MetricsCommandTests {
    static let logger = Logger(label: "metrics-cli-tests") { _ in SwiftLogNoOpLogHandler() }

    @Test("serves the running pipeline's counts at /metrics, and stops with it")
    func servesMetricsWhileRunning() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let (kafka, _) = try await clusterWithSamples(logger: Self.logger)
        defer { kafka.shutdown() }

        // The log (standard error) says where it listens: port 0 takes any free port.
        let (process, log) = try launchLogged(
            executable,
            [
                // Idle long enough to outlast the eight commands run against it below (a slow CI machine took
                // longer than 4 s for them, and the port was free again for the ones that must find it taken).
                "run", "--bootstrap-servers", kafka.bootstrapServers, "--until-idle", "15",
                "--metrics-port", "0", "--metrics-host", "127.0.0.1", "--log-level", "info",
            ],
            logName: "metrics-run"
        )
        defer { try? FileManager.default.removeItem(at: log) }
        defer { if process.isRunning { process.terminate() } }

        var address: String?
        for _ in 0..<300 where address == nil {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("Serving metrics") }),
                let start = line.range(of: "http://")
            {
                address = String(line[start.lowerBound...].prefix { !$0.isWhitespace })
            }
            if address == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let metricsURL = try #require(address, "no 'Serving metrics' line: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")

        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var body = ""
        do {
            // Every sample has an outcome once the pipeline has caught up (two expire: their timers ended in 2023).
            for _ in 0..<300 {
                let response = try await client.execute(HTTPClientRequest(url: metricsURL), timeout: .seconds(5))
                #expect(response.status == .ok)
                body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                if body.contains(#"campaign_pipeline_outcomes_total{type="push.delivered"} 5"#) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            // Consuming in its group: ready, reading every partition of the sends topic.
            let readyURL = metricsURL.replacingOccurrences(of: "/metrics", with: "/readyz")
            let ready = try await client.execute(HTTPClientRequest(url: readyURL), timeout: .seconds(5))
            #expect(ready.status == .ok)
            #expect(String(buffer: try await ready.body.collect(upTo: 1 << 10)) == "ready\n")
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        #expect(body.contains("campaign_pipeline_ready 1\n"), "\(body)")
        #expect(body.contains("campaign_pipeline_assigned_partitions 2\n"), "\(body)")
        #expect(body.contains("campaign_pipeline_in_flight_events "), "\(body)")
        #expect(body.contains(#"campaign_pipeline_events_total{template="basic",platform="fcm"} 1"#), "\(body)")
        #expect(body.contains(#"campaign_pipeline_events_total{template="timer",platform="apns"} 2"#), "\(body)")
        #expect(body.contains(#"campaign_pipeline_outcomes_total{type="push.delivered"} 5"#), "\(body)")
        #expect(body.contains(#"campaign_pipeline_expired_total{cause="timer"} 2"#), "\(body)")

        // `probe` (the image's health check) says it is ready, and that it lives.
        let port = try #require(metricsURL.split(separator: ":").last?.split(separator: "/").first)
        let probe = try await runProcess(executable, ["probe", "--port", String(port)])
        #expect(probe.status == 0 && probe.stdout == "ready\n", "\(probe.stdout) \(probe.stderr)")
        let live = try await runProcess(executable, ["probe", "--port", String(port), "--live"])
        #expect(live.status == 0 && live.stdout == "ok\n", "\(live.stdout) \(live.stderr)")
        // The port from the variable `run` reads it from, as in the compose file's health check.
        let fromEnvironment = try await runProcess(executable, ["probe"], environment: ["CAMPAIGN_PIPELINE_METRICS_PORT": String(port)])
        #expect(fromEnvironment.status == 0 && fromEnvironment.stdout == "ready\n", "\(fromEnvironment.stdout) \(fromEnvironment.stderr)")
        // A variable probe cannot use is a configuration error (78), told apart from an instance that is not ready
        // (1), with no usage text (the command line was right).
        let misset = try await runProcess(executable, ["probe"], environment: ["CAMPAIGN_PIPELINE_METRICS_PORT": "nine"])
        #expect(misset.status == 78, "\(misset.stderr)")
        #expect(!misset.stderr.contains("Usage:"), "\(misset.stderr)")
        #expect(misset.stderr.contains("CAMPAIGN_PIPELINE_METRICS_PORT: expected a port number (0 to 65535), found 'nine'"), "\(misset.stderr)")
        let anyPort = try await runProcess(executable, ["probe"], environment: ["CAMPAIGN_PIPELINE_METRICS_PORT": "0"])
        #expect(anyPort.status == 78, "\(anyPort.stderr)")
        #expect(anyPort.stderr.contains("CAMPAIGN_PIPELINE_METRICS_PORT is 0: run then serves metrics on any free port"), "\(anyPort.stderr)")

        // Another instance on the same port stops at once, saying why, before it connects to Kafka.
        let second = try await runProcess(executable, ["run", "--bootstrap-servers", "127.0.0.1:1", "--metrics-port", String(port), "--metrics-host", "127.0.0.1"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("--metrics-port: cannot serve metrics on 127.0.0.1:\(port): "), "\(second.stderr)")
        #expect(!second.stderr.contains("Pipeline starting"), "\(second.stderr)")
        // Named as it was given: the container image sets only the variable.
        let thirdEnvironment = ["CAMPAIGN_PIPELINE_METRICS_PORT": String(port)]
        let third = try await runProcess(executable, ["run", "--bootstrap-servers", "127.0.0.1:1", "--metrics-host", "127.0.0.1"], environment: thirdEnvironment)
        #expect(third.status == 1)
        #expect(third.stderr.contains("CAMPAIGN_PIPELINE_METRICS_PORT: cannot serve metrics on 127.0.0.1:\(port): "), "\(third.stderr)")
        // Found by review: a host that is no address, or not one of this machine's, was reported as the port's fault.
        for host in ["256.1.1.1", "192.0.2.1"] {
            let wrongHost = try await runProcess(executable, ["run", "--bootstrap-servers", "127.0.0.1:1", "--metrics-port", "0", "--metrics-host", host])
            #expect(wrongHost.status == 1)
            #expect(wrongHost.stderr.contains("--metrics-host: cannot serve metrics on \(host):0: "), "\(wrongHost.stderr)")
            if host == "192.0.2.1" { #expect(wrongHost.stderr.contains("not an address of this machine"), "\(wrongHost.stderr)") }
        }

        // --until-idle: the pipeline ends, and the endpoint with it.
        for _ in 0..<800 where process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning, "the run ended once idle")
        #expect(process.terminationStatus == 0, "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let after = try await runProcess(executable, ["probe", "--port", String(port)])
        #expect(after.status == 1, "nothing answers once the run ended")
        #expect(after.stderr.hasPrefix("no answer from http://127.0.0.1:\(port)/readyz: "), "\(after.stderr)")
    }

    @Test("on SIGTERM the endpoint keeps answering while the pipeline drains: /readyz says stopping, then it closes")
    func endpointOutlivesTheDrain() async throws {
        let pipeline = DrainingService()
        let server = MetricsServer(
            host: "127.0.0.1",
            port: 0,
            logger: Self.logger,
            readiness: { pipeline.isDraining.withLock { $0 } ? .notReady("stopping") : .ready }
        ) { "" }
        try await server.listen()
        let port = try #require(server.boundPort)
        pipeline.port.withLock { $0 = port }
        let group = signalledServiceGroup(running: pipeline, alongside: [server], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await askOnNewConnection(port: port, path: "/readyz") == "200 ready\n")
            // What SIGTERM does.
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // Asked during the drain, as an orchestrator's readiness probe asks while the instance stops.
        #expect(pipeline.answer.withLock { $0 } == "503 not ready: stopping\n")
        // The group ended with the pipeline, and the endpoint with it.
        #expect(await askOnNewConnection(port: port, path: "/healthz", timeout: .seconds(1)) == nil)
    }
}

/// Stands in for the pipeline in its service group: on graceful shutdown it drains, and meanwhile asks the metrics
/// endpoint's readiness check.
private final class DrainingService: Service {
    let port = Mutex<Int>(0)
    let isDraining = Mutex(false)
    let answer = Mutex<String?>(nil)

    func run() async throws {
        try? await gracefulShutdown()
        isDraining.withLock { $0 = true }
        let answer = await askOnNewConnection(port: port.withLock { $0 }, path: "/readyz")
        self.answer.withLock { $0 = answer }
    }
}

/// `GET path` on 127.0.0.1:`port` over a connection of its own, as a probe of an orchestrator or `campaign-pipeline
/// probe` asks: the status code and the body, or nil when nothing answers.
private func askOnNewConnection(port: Int, path: String, timeout: TimeAmount = .seconds(5)) async -> String? {
    let client = HTTPClient(eventLoopGroupProvider: .singleton)
    var answer: String?
    do {
        let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: timeout)
        answer = "\(response.status.code) " + String(buffer: try await response.body.collect(upTo: 1 << 10))
    } catch {}
    try? await client.shutdown()
    return answer
}
