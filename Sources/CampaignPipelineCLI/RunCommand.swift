import ArgumentParser
import Foundation
import Logging
import MetricsEndpoint
import PipelineCore
import PipelineRuntime
import PlatformSinks
import ServiceLifecycle
import UnixSignals

/// `campaign-pipeline run`: the streaming deployment.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Consume campaign events from Kafka, render them and deliver the payloads (the streaming deployment).",
        discussion: """
            Reads push.requested events from the sends topic in a consumer group, renders each with its \
            template plugin, hands the FCM and APNs payloads to their platform's sinks (by default the Kafka \
            payload topics; FCM HTTP v1 and APNs themselves when sinks.fcm and sinks.apns name them) and writes \
            one terminal analytics event per message to the analytics topic. Events that cannot be rendered go \
            to the dead-letter topic. A source offset is committed only after every sink has answered for it \
            and every output derived from it is acknowledged, so killing the process at any moment loses \
            nothing. Run more instances with the same --group to scale out; SIGINT or SIGTERM stops \
            gracefully (drain, commit, close) within processing.drainTimeoutSeconds plus 15 seconds. When no broker \
            answers at the start (down, unreachable, or refusing the TLS or SASL settings), it exits with status \
            69; once running, it keeps retrying while the cluster is away. A consumer group that goes on \
            refusing it (no rights on the group, a session timeout outside the brokers' bounds, …) for \
            processing.groupRefusalSeconds (60) ends it with status 1, saying what to change. While it has work \
            it logs a Progress line every processing.progressLogSeconds (30). It exits 0 once stopped by a \
            signal (drained and committed) or, with --until-idle, once idle; 78 for a setting it cannot use \
            (the file, a variable, a Kafka property, a sink's credentials; named in the error); 1 when it \
            fails otherwise, or a second signal or the shutdown watchdog ends it; 64 on a usage error.

            Configuration, later sources winning: defaults, the --config file (or CAMPAIGN_PIPELINE_CONFIG), \
            the environment (CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS, CAMPAIGN_PIPELINE_GROUP, and CAMPAIGN_PIPELINE_KAFKA_<NAME> \
            for any librdkafka property, e.g. CAMPAIGN_PIPELINE_KAFKA_SECURITY_PROTOCOL=SASL_SSL; the sinks' \
            CAMPAIGN_PIPELINE_SINKS_FCM and _SINKS_APNS, CAMPAIGN_PIPELINE_FCM_* and CAMPAIGN_PIPELINE_APNS_* for their \
            credentials), then the flags below. Config/README.md explains every key and variable. --print-config \
            shows the result with secrets masked.

            To try it without a Kafka cluster, run `make run` (an embedded broker with sample events).
            """
    )

    @OptionGroup var connection: KafkaConnectionOptions

    @Option(help: "The consumer group every instance of this deployment shares (default campaign-pipeline; or CAMPAIGN_PIPELINE_GROUP, or the config file).")
    var group: String?

    // `.unconditional`: a negative number is this option's value (refused as not positive), not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Exit once every assigned partition has been read to its end, with nothing in flight, for this many seconds.", valueName: "seconds"))
    var untilIdle: Double?

    @Flag(help: "Print the effective configuration (secrets masked) and exit.")
    var printConfig = false

    // `.unconditional`: a negative number is this option's value (refused as out of range), not an unknown option.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Serve Prometheus metrics at http://<metrics-host>:<port>/metrics, a liveness check at /healthz and a readiness check at /readyz (or CAMPAIGN_PIPELINE_METRICS_PORT; off by default).",
            valueName: "port"
        )
    )
    var metricsPort: Int?

    @Option(help: ArgumentHelp("The address the metrics endpoint listens on.", valueName: "host"))
    var metricsHost = "0.0.0.0"

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if group?.isEmpty == true { throw ValidationError("--group must not be empty") }
        if let untilIdle { try validateSeconds(untilIdle, option: "--until-idle") }
        if let metricsPort, !(0...65_535).contains(metricsPort) { throw ValidationError("--metrics-port must be 0 to 65535, not \(metricsPort)") }
    }

    func run() async throws {
        let configuration = try effectiveConfiguration(environment: ProcessInfo.processInfo.environment)
        // As the run's first client would (a property misspelt, or a value librdkafka does not take), naming where it
        // was set; and the settings read outside the configuration: checked before `--print-config` says all is
        // well. (librdkafka checks properties against each other only as it makes a client.)
        try configuration.validateKafkaProperties()
        let logger = try logging.makeLogger(label: "campaign-pipeline")
        let servedPort = try metricsPort ?? Self.environmentMetricsPort(in: 0...65_535)
        if printConfig {
            print(String(decoding: PrettyJSON.format(configuration.describedAsJSON()), as: UTF8.self))
        }
        // After printing, so the configuration is shown, and the check fails as the run would.
        guard !configuration.bootstrapServers.isEmpty else {
            throw CommandError.configuration(
                """
                no Kafka bootstrap servers configured: pass --bootstrap-servers, set CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS, \
                or set kafka.bootstrapServers in the --config file. To try the pipeline on an embedded broker with \
                sample events, run `make run`.
                """
            )
        }
        if printConfig { return }
        let pipeline = CampaignPipeline(configuration: configuration, registry: BuiltinTemplates.registry, logger: logger)
        let metrics = metricsServer(port: servedPort, for: pipeline, logger: logger)
        do {
            // Before Kafka: a port already in use stops the command at once, not after the pipeline has started.
            try await metrics?.listen()
        } catch {
            // Named as the operator gave the port (the container image sets only the variable), or the host.
            let option =
                (error as? MetricsServerError)?.isAboutHost == true
                ? "--metrics-host" : metricsPort != nil ? "--metrics-port" : "CAMPAIGN_PIPELINE_METRICS_PORT"
            throw CommandError("\(option): \(error)")
        }
        try await pipeline.runUntilSignalled(
            logger: logger,
            shutdownLimit: configuration.shutdownLimit,
            alongside: metrics.map { [$0] } ?? []
        )
    }

    /// The metrics endpoint on `port`, when `--metrics-port` or `CAMPAIGN_PIPELINE_METRICS_PORT` asks for one.
    func metricsServer(port: Int?, for pipeline: CampaignPipeline, logger: Logger) -> MetricsServer? {
        guard let port else { return nil }
        return MetricsServer(host: metricsHost, port: port, logger: logger, readiness: { pipeline.status.readiness }) {
            PrometheusText.render(pipeline.statistics.snapshot, status: pipeline.status)
        }
    }

    /// `CAMPAIGN_PIPELINE_METRICS_PORT`, when set: the port `run` serves its metrics on, and the one `probe` asks.
    ///
    /// - Throws: ``CommandError`` naming the variable when it is not a port number in `range`.
    static func environmentMetricsPort(in range: ClosedRange<Int>) throws -> Int? {
        let name = PipelineConfiguration.EnvironmentKey.metricsPort
        guard let text = ProcessInfo.processInfo.environment[name], !text.isEmpty else { return nil }
        guard let number = Int(text), range.contains(number) else {
            // A Kubernetes Service named campaign-pipeline-metrics replaces the image's value with `tcp://…`; ignored,
            // it would turn the metrics and health endpoints off without a word.
            let hint =
                PipelineConfiguration.EnvironmentKey.isServiceLink(name, text)
                ? ": Kubernetes sets this for a Service named campaign-pipeline-metrics; set the variable in the pod's env (it wins over service links), or set enableServiceLinks: false"
                : ""
            throw CommandError.configuration("\(name): expected a port number (\(range.lowerBound) to \(range.upperBound)), found '\(text)'\(hint)")
        }
        return number
    }

    /// Defaults ← file ← environment ← flags.
    func effectiveConfiguration(environment: [String: String]) throws -> PipelineConfiguration {
        var configuration = try connection.configuration(environment: environment)
        if let group { configuration.groupID = group }
        if let untilIdle { configuration.untilIdle = .milliseconds(Int64(untilIdle * 1000)) }
        return configuration
    }
}

/// The options every command that talks to Kafka shares: brokers, the configuration file and librdkafka
/// properties.
struct KafkaConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Kafka brokers, comma-separated (or CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS, or the config file).", valueName: "host:port,..."))
    var bootstrapServers: String?

    @Option(help: ArgumentHelp("A JSON configuration file (see Config/README.md; or CAMPAIGN_PIPELINE_CONFIG).", valueName: "file"))
    var config: String?

    @Option(
        name: .customLong("kafka-property"),
        help: ArgumentHelp("Any librdkafka property for every client, as name=value (repeatable).", valueName: "name=value")
    )
    var kafkaProperties: [String] = []

    func validate() throws {
        for property in kafkaProperties {
            guard let name = property.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first, !name.isEmpty, property.contains("=") else {
                throw ValidationError("--kafka-property '\(property)': expected name=value")
            }
            do {
                try PipelineConfiguration.checkPassThrough(String(name), key: "--kafka-property \(name)")
            } catch {
                throw ValidationError("\(error.key): \(error.reason)")
            }
        }
    }

    /// The configuration from defaults, the file, the environment and these flags. Without `checkingSinkCredentials`,
    /// FCM and APNs sinks the routes name need no credentials (a run that sends to neither).
    func configuration(environment: [String: String], checkingSinkCredentials: Bool = true) throws -> PipelineConfiguration {
        var file: JSONObject?
        var origin: String?
        if let path = config {
            file = try ConfigurationFile.read(path, source: "--config")
            origin = "--config '\(path)'"
        } else if let path = environment[PipelineConfiguration.EnvironmentKey.configFile], !path.isEmpty {
            // Empty is unset, as for every other variable (`CAMPAIGN_PIPELINE_CONFIG: ${VAR}` in a compose file).
            file = try ConfigurationFile.read(path, source: PipelineConfiguration.EnvironmentKey.configFile)
            origin = "\(PipelineConfiguration.EnvironmentKey.configFile) '\(path)'"
        }
        var configuration: PipelineConfiguration
        do {
            configuration = try PipelineConfiguration.load(file: file, environment: environment, checkingSinkCredentials: checkingSinkCredentials)
        } catch {
            // A key of the file names the file, which may have come from a variable set far from the command line.
            guard let origin, !error.key.hasPrefix(PipelineConfiguration.EnvironmentKey.prefix) else { throw error }
            var located = error
            located.key += " (in \(origin))"
            throw located
        }
        if let bootstrapServers { configuration.bootstrapServers = PipelineConfiguration.splitServers(bootstrapServers) }
        for property in kafkaProperties {
            // Checked by `validate()`: a name, then `=`.
            let parts = property.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            configuration.overrideKafkaProperty(String(parts[0]), parts.count > 1 ? String(parts[1]) : "", source: "--kafka-property")
        }
        return configuration
    }
}

/// Reads a JSON configuration file with errors that name the file, where its path came from (`source`: `--config`
/// or `CAMPAIGN_PIPELINE_CONFIG`) and, for a syntax error, its line and column.
enum ConfigurationFile {
    static func read(_ path: String, source: String) throws -> JSONObject {
        let bytes: [UInt8]
        do {
            bytes = try UnreadableFile.contents(of: path)
        } catch {
            throw CommandError.configuration("\(source): \(error)")
        }
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue(parsing: bytes)
        } catch {
            let (line, column) = position(of: error.offset, in: bytes)
            throw CommandError.configuration("\(source): '\(path)' is not valid JSON: \(error.kind) at line \(line), column \(column)")
        }
        guard let object = value.objectValue else {
            throw CommandError.configuration("\(source): '\(path)' must hold a JSON object")
        }
        return object
    }

    /// The line and column (from 1; the column in bytes) of the byte at `offset`.
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        let before = bytes.prefix(min(max(offset, 0), bytes.count))
        let line = before.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        return (line, before.count - lineStart + 1)
    }
}

/// Indented JSON for people (the wire format stays compact).
enum PrettyJSON {
    static func format(_ value: JSONValue, indent: String = "") -> [UInt8] {
        var out: [UInt8] = []
        write(value, indent: indent, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, indent: String, into out: inout [UInt8]) {
        let inner = indent + "  "
        switch value {
        case .object(let object) where !object.isEmpty:
            out.append(contentsOf: "{\n".utf8)
            for (index, (key, item)) in object.enumerated() {
                out.append(contentsOf: inner.utf8)
                out.append(contentsOf: JSONValue.string(key).encoded())
                out.append(contentsOf: ": ".utf8)
                write(item, indent: inner, into: &out)
                out.append(contentsOf: (index + 1 < object.count ? ",\n" : "\n").utf8)
            }
            out.append(contentsOf: (indent + "}").utf8)
        case .array(let items) where !items.isEmpty:
            out.append(contentsOf: "[\n".utf8)
            for (index, item) in items.enumerated() {
                out.append(contentsOf: inner.utf8)
                write(item, indent: inner, into: &out)
                out.append(contentsOf: (index + 1 < items.count ? ",\n" : "\n").utf8)
            }
            out.append(contentsOf: (indent + "]").utf8)
        default:
            out.append(contentsOf: value.encoded())
        }
    }
}

extension CampaignPipeline {
    /// Runs the pipeline in a service group until it ends by itself or SIGTERM/SIGINT asks it to shut down gracefully;
    /// `services` (the metrics endpoint) run beside it and stop with it. A shutdown that takes longer than
    /// `shutdownLimit`, or a second signal, ends the process (``ShutdownWatchdog``).
    func runUntilSignalled(logger: Logger, shutdownLimit: Duration, alongside services: [any Service] = []) async throws {
        ShutdownWatchdog(limit: shutdownLimit, logger: logger).start()
        try await signalledServiceGroup(running: self, alongside: services, logger: logger).run()
    }
}

extension PipelineConfiguration {
    /// How long a graceful shutdown may take from the signal: the drain timeout, then 15 s to commit and close the
    /// clients and sinks (the pipeline waits for its final commit and its consumers' close until the drain timeout and
    /// 6 s, then 5 s for the producers' last flush, with the brokers gone too; the watchdog is for what no bound
    /// foresaw).
    var shutdownLimit: Duration { drainTimeout + .seconds(15) }
}

/// The service group `run` and `replay` run `main` (the pipeline) in: it ends when `main` returns, and SIGTERM or
/// SIGINT shut it down gracefully. `services` (the metrics endpoint) come first in the group, which shuts its
/// services down in reverse order: they are asked to stop only once `main` has drained and returned, so `/readyz`
/// answers `not ready: stopping` and `/metrics` shows the drain while it lasts.
func signalledServiceGroup(running main: any Service, alongside services: [any Service], logger: Logger) -> ServiceGroup {
    ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: services.map { .init(service: $0) } + [.init(service: main, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
    )
}
