import ArgumentParser
import Foundation
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime

/// `campaign-pipeline bench`: relay (the limit) versus the real pipeline on one embedded broker.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the pipeline end to end against a bare Kafka relay on an embedded broker.",
        discussion: """
            Starts an embedded broker and feeds it N realistic mixed events (every template on both \
            platforms, personalized, about 3 % broken), then runs, one after the other on the same broker:

              relay     our Kafka layer consuming the events and producing the same bytes plus a ~200-byte \
            analytics record each, committing after acknowledgement, with no decoding or rendering (the limit);
              pipeline  the real `run` path with all its guarantees, followed by the accounting check (every \
            event exactly one terminal outcome on the analytics topic).

            For each: events/s from the end of the warm-up (the first 5 % of the events, and at least the \
            feeder's first window, which waits out the consumer group's join) to the last acknowledgement, p50/p99 \
            end-to-end latency after the warm-up, CPU seconds per 1,000 events of this process, this process's peak RSS during \
            the run (reset before each run), and the pipeline/relay ratio; then the relay's CPU per event over \
            the pipeline's, which is that ratio as it would be if both runs were bound by this process's CPU \
            alone. The events are fed while each run consumes (the embedded broker keeps only about 5 MiB per \
            partition).

            The feeder stays at most --window events per partition ahead of the run, so a run's rate is at most \
            about the window over its latency: at the default window the relay is held by that more than by its \
            CPU (--window 3000, the largest, lets it go faster). Both runs' consumers \
            use fetch.wait.max.ms=10: the embedded (mock) broker holds a fetch that finds nothing new for the \
            whole wait even when records arrive meanwhile, which a real broker does not.

            The broker runs in a child process (`campaign-pipeline broker`) by default, so CPU and RSS are \
            the pipeline's own (plus the feeder's); --broker in-process runs it inside this process instead, \
            where its memory (every topic's records) and CPU count too.

            The report names the malloc implementation the process runs on (the executable links jemalloc \
            on Linux; MALLOC_CONF changes its options), since CPU and RSS depend on it.

            A run that finishes no event for 60 s (a broker gone) fails with an error, as does a feeder that \
            cannot produce. It exits 0 when every run is accounted for, 1 when a run fails or the pipeline run \
            fails the accounting check, 64 on a usage error.

            Figures vary from run to run on a shared machine (±10-20 % here): --rounds N repeats both runs N \
            times, each round on a fresh broker, and reports every round and the medians (the ratio is the \
            median of the rounds' ratios; peak RSS is the largest). The rounds run in this one process: a later \
            round's peak RSS includes what the allocator kept from the earlier ones, so compare a first round's \
            with a single run's.
            """
    )

    /// Where the embedded broker runs.
    enum BrokerPlacement: String, ExpressibleByArgument, CaseIterable {
        case process
        case inProcess = "in-process"
    }

    @Option(help: "Where the embedded broker runs: a child process (the default) or in-process.")
    var broker: BrokerPlacement = .process

    @Option(help: "Events per run.")
    var events: Int = 20_000

    @Option(help: "Partitions of the sends topic.")
    var partitions: Int32 = 6

    @Option(help: "Events per partition the feeder may be ahead of the run (what waits in the topic; 10 to 3,000: the embedded broker keeps only about 5 MiB per partition).")
    var window = 1_000

    @Option(help: "Rounds of both runs, each on a fresh broker; more than one reports the medians too.")
    var rounds = 1

    @Flag(help: "Print the results as JSON instead of a table.")
    var json = false

    @Option(help: ArgumentHelp("The folder holding samples/.", valueName: "dir"))
    var configDirectory = "Config"

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard events >= 100 else { throw ValidationError("--events must be at least 100, not \(events)") }
        guard (1...64).contains(partitions) else { throw ValidationError("--partitions must be between 1 and 64") }
        guard (1...50).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 50, not \(rounds)") }
        guard (10...3_000).contains(window) else {
            throw ValidationError("--window must be between 10 and 3,000 events per partition, not \(window) (the embedded broker keeps only about 5 MiB per partition)")
        }
    }

    func run() async throws {
        var logger = try logging.makeLogger(label: "campaign-pipeline.bench")
        if logging.logLevel == nil && ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { logger.logLevel = .error }
        let folder = "\(configDirectory)/samples"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else {
            throw CommandError("no sample events: cannot read the folder \(folder) (run from the repository root, or pass --config-directory)")
        }
        let names = entries.filter { $0.hasSuffix(".json") }.sorted()
        guard !names.isEmpty else { throw CommandError("no sample events: \(folder) has no .json files") }
        let samples: [JSONObject] = try names.map { name in
            guard let data = FileManager.default.contents(atPath: "\(folder)/\(name)"),
                let object = try JSONValue(parsing: Array(data)).objectValue
            else { throw CommandError("cannot read \(folder)/\(name) as a JSON object") }
            return object
        }
        let input = BenchmarkEvents(samples: samples, count: events)
        let averageSize = input.averageSize

        var results: [Round] = []
        for round in 1...rounds {
            results.append(try await measureRound(round, input: input, logger: logger))
        }
        report(results, averageSize: averageSize)
        if let failed = results.first(where: { !$0.pipeline.isAccounted }) {
            throw CommandError("the pipeline run failed the accounting check: \(failed.pipeline.accounting)")
        }
    }

    /// One round's results.
    struct Round {
        var relay: PipelineBenchmark.RunResult
        var pipeline: PipelineBenchmark.RunResult

        var ratio: Double { relay.eventsPerSecond > 0 ? pipeline.eventsPerSecond / relay.eventsPerSecond : 0 }
        /// The relay's CPU per event over the pipeline's: what the ratio of rates would be if both were bound by this
        /// process's CPU alone (at the default window the relay is partly bound by the feeder's window instead).
        var cpuRatio: Double { pipeline.cpuSecondsPer1000 > 0 ? relay.cpuSecondsPer1000 / pipeline.cpuSecondsPer1000 : 0 }
    }

    /// Starts a broker, runs the relay and then the pipeline on it, and stops it.
    private func measureRound(_ round: Int, input: BenchmarkEvents, logger: Logger) async throws -> Round {
        let cluster: BenchmarkCluster
        var inProcess: EmbeddedKafka?
        var child: BrokerProcess?
        switch broker {
        case .inProcess:
            let kafka = try EmbeddedKafka(brokers: 1, logger: logger)
            inProcess = kafka
            cluster = .inProcess(kafka)
        case .process:
            let process = try await BrokerProcess.start(topics: PipelineBenchmark.topicPlan(partitions: partitions))
            child = process
            cluster = BenchmarkCluster(bootstrapServers: process.bootstrapServers) { _, _ in }
        }
        defer { inProcess?.shutdown() }
        do {
            let result = try await measure(round: round, on: cluster, input: input, logger: logger)
            await child?.stop()
            return result
        } catch {
            await child?.stop()
            throw error
        }
    }

    private func measure(round: Int, on cluster: BenchmarkCluster, input: BenchmarkEvents, logger: Logger) async throws -> Round {
        let isTerminal = isatty(STDERR_FILENO) == 1
        let label = rounds > 1 ? " (round \(round) of \(rounds))" : ""
        let lastLine = Locked(ContinuousClock.now - .seconds(10))
        let benchmark = PipelineBenchmark(
            cluster: cluster,
            events: input,
            partitions: partitions,
            windowPerPartition: window,
            registry: BuiltinTemplates.registry,
            logger: logger
        ) { run, done, total in
            let text = "\(run)\(label): \(done)/\(total) events"
            if isTerminal {
                FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
            } else if lastLine.withLock({ last in
                guard ContinuousClock.now - last >= .seconds(2) || done == total else { return false }
                last = .now
                return true
            }) {
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
        }
        let relay = try await benchmark.relay()
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
        let pipeline = try await benchmark.pipeline()
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
        return Round(relay: relay, pipeline: pipeline)
    }

    /// Prints the rounds (and their medians when there are several) as a table or as JSON.
    private func report(_ results: [Round], averageSize: Int) {
        // The runs' peaks are reset before each run: the process's is the largest of them, or the accounting's.
        let peak = (results.flatMap { [$0.relay.peakRSSMegabytes, $0.pipeline.peakRSSMegabytes] } + [PipelineBenchmark.peakResidentMegabytes()]).max() ?? 0
        let allocator = PipelineBenchmark.activeAllocator()
        let ratio = Self.median(results.map(\.ratio))
        let cpuRatio = Self.median(results.map(\.cpuRatio))
        let medians = results.count > 1 ? [\Round.relay, \Round.pipeline].map { run in Self.median(of: results.map { $0[keyPath: run] }) } : []

        if json {
            func object(_ result: PipelineBenchmark.RunResult, round: Int?) -> JSONValue {
                var object: JSONObject = [
                    "run": .string(result.name), "events": .int(result.events),
                    "eventsPerSecond": .double(result.eventsPerSecond.rounded()),
                    "p50Milliseconds": .double(result.p50Milliseconds), "p99Milliseconds": .double(result.p99Milliseconds),
                    "cpuSecondsPer1000": .double(result.cpuSecondsPer1000), "peakRSSMegabytes": .double(result.peakRSSMegabytes.rounded()),
                    "accounted": .bool(result.isAccounted),
                    "accounting": .string(result.accounting),
                ]
                if let round { object["round"] = .int(round) }
                return .object(object)
            }
            var report: JSONObject = [
                "events": .int(events), "partitions": .int(Int(partitions)), "windowPerPartition": .int(window), "averageEventBytes": .int(averageSize),
                "broker": .string(broker.rawValue), "allocator": .string(allocator), "rounds": .int(results.count),
                "runs": .array(results.enumerated().flatMap { index, round in [round.relay, round.pipeline].map { object($0, round: index + 1) } }),
                "pipelineToRelay": .double(ratio), "relayToPipelineCPUPerEvent": .double(cpuRatio), "peakRSSMegabytes": .double(peak),
            ]
            if !medians.isEmpty { report["medians"] = .array(medians.map { object($0, round: nil) }) }
            print(String(decoding: PrettyJSON.format(.object(report)), as: UTF8.self))
        } else {
            let plural = results.count > 1 ? ", \(results.count) rounds" : ""
            print("campaign-pipeline bench: \(events) events (\(averageSize) bytes on average), \(partitions) partitions\(plural), embedded broker (\(broker.rawValue)), allocator \(allocator)")
            print("run                events/s    p50 ms    p99 ms   CPU s/1000   peak RSS MiB   accounting")
            func row(_ name: String, _ result: PipelineBenchmark.RunResult, accounting: String) {
                print(
                    String(
                        // Padded here: Foundation on Linux does not pad a `%-16@`.
                        format: "%@ %10.0f %9.1f %9.1f %12.4f %14.0f   %@",
                        name.padding(toLength: max(16, name.count), withPad: " ", startingAt: 0) as NSString, result.eventsPerSecond, result.p50Milliseconds, result.p99Milliseconds,
                        result.cpuSecondsPer1000, result.peakRSSMegabytes, accounting as NSString
                    )
                )
            }
            for (index, round) in results.enumerated() {
                for result in [round.relay, round.pipeline] {
                    row(results.count > 1 ? "\(result.name) \(index + 1)" : result.name, result, accounting: result.accounting)
                }
            }
            for result in medians {
                row("\(result.name) median", result, accounting: "\(result.accounting); peak RSS the largest")
            }
            let ratios = results.count > 1 ? " (median of \(results.map { String(format: "%.0f", $0.ratio * 100) }.joined(separator: ", ")))" : ""
            print(String(format: "pipeline/relay: %.0f %%%@    process peak RSS (every run and the accounting): %.0f MiB", ratio * 100, ratios as NSString, peak))
            print(String(format: "CPU per event, relay/pipeline: %.0f %% (the ratio if both runs were bound by this process's CPU alone)", cpuRatio * 100))
        }
    }

    /// The median of `values` (the mean of the middle two for an even count).
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Each figure's median over `results` (peak RSS: the largest); accounted when every run was.
    static func median(of results: [PipelineBenchmark.RunResult]) -> PipelineBenchmark.RunResult {
        var median = results[0]
        median.eventsPerSecond = Self.median(results.map(\.eventsPerSecond))
        median.p50Milliseconds = Self.median(results.map(\.p50Milliseconds))
        median.p99Milliseconds = Self.median(results.map(\.p99Milliseconds))
        median.cpuSecondsPer1000 = Self.median(results.map(\.cpuSecondsPer1000))
        median.peakRSSMegabytes = results.map(\.peakRSSMegabytes).max() ?? 0
        median.isAccounted = results.allSatisfy(\.isAccounted)
        median.accounting = "\(results.filter(\.isAccounted).count) of \(results.count) runs accounted"
        return median
    }
}

/// The embedded broker in a child process of this executable (`campaign-pipeline broker`), so the benchmark's own
/// memory and CPU are measured without it.
final class BrokerProcess: Sendable {
    private let process: Process
    /// The child's bootstrap address.
    let bootstrapServers: String

    private init(process: Process, bootstrapServers: String) {
        self.process = process
        self.bootstrapServers = bootstrapServers
    }

    /// Starts the child with `topics` created and waits for its address.
    static func start(topics: [(name: String, partitions: Int32)]) async throws -> BrokerProcess {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // `--parent-pid`: the child stops by itself if this process is killed before it can stop it.
        process.arguments = ["broker", "--brokers", "1", "--partitions", "1", "--log-level", "error", "--parent-pid", String(getpid())]
            + topics.flatMap { ["--topic", "\($0.name):\($0.partitions)"] }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Read the first line off the cooperative pool: the read blocks until the child prints it.
        let line: String? = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                while true {
                    let chunk = output.fileHandleForReading.readData(ofLength: 1)
                    guard let byte = chunk.first, byte != UInt8(ascii: "\n") else { break }
                    bytes.append(byte)
                }
                continuation.resume(returning: bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self))
            }
        }
        guard let line, !line.isEmpty else {
            process.terminate()
            throw CommandError("the broker child process did not start (exit status \(process.isRunning ? -1 : process.terminationStatus))")
        }
        return BrokerProcess(process: process, bootstrapServers: line)
    }

    /// Stops the child (SIGTERM, then SIGKILL after 5 s: a child spawned from a thread with SIGTERM blocked
    /// inherits that mask and never sees it) and waits for it, off the cooperative pool.
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let process = self.process
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                process.waitUntilExit()
                continuation.resume()
            }
        }
    }
}
