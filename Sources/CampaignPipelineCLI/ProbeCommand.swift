import ArgumentParser
import Foundation
import MetricsEndpoint

/// `campaign-pipeline probe`: asks a running instance's metrics endpoint whether it is ready (or alive), for the
/// health checks of the container image, which has no curl.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Ask a running instance (started with --metrics-port) whether it is ready; exit 0 if so, 1 if not.",
        discussion: """
            Requests http://<host>:<port>/readyz (with --live, /healthz) from the metrics endpoint of an \
            instance started with --metrics-port or CAMPAIGN_PIPELINE_METRICS_PORT, prints the answer \
            ("ready"; on standard error "not ready: <reason>" or why there was no answer) and exits \
            0 for 200, 1 for any other answer or none within --timeout, 64 for a usage error (a bad --port), \
            78 for a CAMPAIGN_PIPELINE_METRICS_PORT it cannot use (not a port, or 0: run then picks any free \
            port). A \
            health check for the container image, which has no curl:

              healthcheck:
                test: ["CMD", "campaign-pipeline", "probe"]
            """
    )

    // `.unconditional`: a negative number is this option's value (refused as out of range), not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("The metrics endpoint's port (default: CAMPAIGN_PIPELINE_METRICS_PORT, else 9464).", valueName: "port"))
    var port: Int?

    @Option(help: ArgumentHelp("The address the endpoint is reached at.", valueName: "host"))
    var host = "127.0.0.1"

    @Flag(help: "Check that the process runs (/healthz) instead of that it consumes in its group (/readyz).")
    var live = false

    // `.unconditional`: a negative number is this option's value (refused as not positive), not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for the answer.", valueName: "seconds"))
    var timeout: Double = 2

    func validate() throws {
        if let port, !(1...65_535).contains(port) { throw ValidationError("--port must be 1 to 65535, not \(port)") }
        try validateSeconds(timeout, option: "--timeout")
    }

    func run() async throws {
        let port = try self.port ?? Self.environmentPort() ?? 9464
        let answer = await MetricsProbe.ask(host: host, port: port, check: live ? .live : .ready, timeout: .milliseconds(Int64(timeout * 1_000)))
        guard answer.passed else {
            FileHandle.standardError.write(Data((answer.text + "\n").utf8))
            throw ExitCode(1)
        }
        print(answer.text)
    }

    /// `CAMPAIGN_PIPELINE_METRICS_PORT` as `probe` can use it, when set.
    ///
    /// - Throws: ``CommandError/configuration(_:)`` (status 78, not the 1 of an instance that is not ready) when it
    ///   is not a port number, or is 0: `run` then serves on any free port, which `probe` cannot know.
    static func environmentPort() throws -> Int? {
        let port = try RunCommand.environmentMetricsPort(in: 0...65_535)
        guard port != 0 else {
            throw CommandError.configuration(
                "CAMPAIGN_PIPELINE_METRICS_PORT is 0: run then serves metrics on any free port, which probe cannot know; give that port (run logs it as `Serving metrics`) with --port"
            )
        }
        return port
    }
}
