import Foundation
public import KafkaClient
public import Logging
public import PipelineCore
import Synchronization

/// The end-to-end benchmark behind `campaign-pipeline bench`: the same events through a bare Kafka relay (the
/// physical limit of our Kafka layer on this machine) and through the real pipeline, on one embedded broker.
///
/// The mock broker keeps only about 5 MiB per partition, so the events are not preloaded all at once: a feeder
/// produces them while the run consumes, never more than ``window`` events ahead of it.
public struct PipelineBenchmark: Sendable {
    /// One run's figures.
    public struct RunResult: Sendable {
        /// `relay` or `pipeline`.
        public var name: String
        /// Events processed.
        public var events: Int
        /// Events per second after the warm-up (``PipelineBenchmark/warmUp``): the events finished from the first
        /// moment past it to the last one, over that time (over the whole run when it ended within one sample).
        public var eventsPerSecond: Double
        /// Median end-to-end latency (record timestamp to terminal acknowledgement) after the warm-up,
        /// milliseconds. It includes the time an event waits in the topic behind the feeder's window.
        public var p50Milliseconds: Double
        /// 99th percentile end-to-end latency, milliseconds.
        public var p99Milliseconds: Double
        /// Process CPU seconds (user + system, the feeder included; the broker too when it runs in-process) per
        /// 1,000 events.
        public var cpuSecondsPer1000: Double
        /// The process's peak resident memory during the run (the feeder included; the broker too when it runs
        /// in-process), MiB; the peak is reset to the current RSS before each run.
        public var peakRSSMegabytes: Double
        /// Whether every event has exactly one terminal outcome (pipeline) or one acknowledged copy (relay).
        public var isAccounted: Bool
        /// What the accounting found.
        public var accounting: String
    }

    /// The broker the runs use.
    public let cluster: BenchmarkCluster
    /// The events, in the order they are produced.
    public let events: BenchmarkEvents
    /// Partitions of the sends topic.
    public let partitions: Int32
    /// The most events produced ahead of the run.
    public var window: Int
    /// The template plugins.
    public let registry: TemplateRegistry
    /// Receives `(run, done, total)` about every 200 ms.
    public let progress: @Sendable (String, Int, Int) -> Void
    /// How long a run may go without finishing an event before it fails (a broker gone, a run stuck), instead of
    /// waiting for ever.
    public var stallTimeout: Duration = .seconds(60)
    let logger: Logger

    /// The events of a run left out of its rate and latencies: the first 5 %, and at least the feeder's window,
    /// whose events are produced before the run's consumer has joined its group and so wait out the join (at most
    /// half the run).
    public var warmUp: Int { max(1, min(max(events.count / 20, window), events.count / 2)) }

    /// Creates a benchmark; the feeder stays at most `windowPerPartition` × `partitions` events ahead of a run.
    public init(
        cluster: BenchmarkCluster,
        events: BenchmarkEvents,
        partitions: Int32,
        windowPerPartition: Int = 1_000,
        registry: TemplateRegistry,
        logger: Logger,
        progress: @escaping @Sendable (String, Int, Int) -> Void
    ) {
        self.cluster = cluster
        self.events = events
        self.partitions = partitions
        precondition(windowPerPartition > 0, "the feeder's window must be positive")
        self.window = Int(partitions) * windowPerPartition
        self.registry = registry
        self.logger = logger
        self.progress = progress
    }

    /// Consumer settings of both runs. The mock broker holds a fetch that finds no new records for the whole
    /// `fetch.wait.max.ms` (librdkafka's default is 500 ms), even when records arrive meanwhile, where a real broker
    /// answers as soon as they do. Left at 500 ms, a run that catches up with the feeder idles half a second each
    /// time, and the rate measured is the feeder's window per 500 ms rather than the consumer's speed.
    static let consumerProperties = ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "fetch.wait.max.ms": "10"]

    /// The topics of one run: the contract's names under the run's prefix.
    static func topics(_ run: String) -> PipelineConfiguration.Topics {
        var topics = PipelineConfiguration.Topics()
        topics.sends = "\(run).\(topics.sends)"
        topics = topics.prefixingOutputs(with: "\(run).")
        topics.definitions = "\(run).\(PipelineConfiguration.Topics().definitions)"
        return topics
    }

    /// Every topic both runs use and its partition count: inputs have `partitions`, outputs 64, so the mock broker
    /// (about 5 MiB per partition) keeps them all. Create them before the runs (``BenchmarkCluster``).
    public static func topicPlan(partitions: Int32) -> [(name: String, partitions: Int32)] {
        ["relay", "pipeline"].flatMap { run in
            let topics = Self.topics(run)
            return topics.all.map { topic in
                let isInput = topic == topics.sends || topic == topics.timers || topic == topics.definitions
                return (topic, isInput ? partitions : 64)
            }
        }
    }

    /// The topics of one run, created if the cluster creates topics.
    func topics(_ run: String) throws(KafkaError) -> PipelineConfiguration.Topics {
        let topics = Self.topics(run)
        for (name, count) in Self.topicPlan(partitions: partitions) where topics.all.contains(name) {
            try cluster.createTopic(name, count)
        }
        return topics
    }

    /// Produces the events to `topic`, staying at most ``window`` events ahead of `processed()`.
    func feed(_ topic: String, processed: @escaping @Sendable () -> Int) async throws {
        var configuration = KafkaProducerConfiguration(bootstrapServers: [cluster.bootstrapServers])
        configuration.properties["linger.ms"] = "5"
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let failures = Locked<(count: Int, first: KafkaError?)>((0, nil))
        func failIfAnyFailed() throws(KafkaError) {
            let (count, first) = failures.withLock { $0 }
            guard count > 0 else { return }
            throw KafkaError(code: .deliveryFailed, message: "the feeder could not produce \(count) events; the first: \(first.map { "\($0)" } ?? "?")", topic: topic)
        }
        do {
            for index in 0..<events.count {
                if index % min(500, window) == 0 {
                    // A failed record is never processed, so the run would never catch up: fail instead of waiting.
                    while index - processed() > window {
                        try failIfAnyFailed()
                        try await Task.sleep(for: .milliseconds(2))
                    }
                    try failIfAnyFailed()
                }
                let event = events.event(at: index)
                let record = KafkaProducerRecord(topic: topic, key: event.key, value: event.value)
                try await Self.enqueue(producer, record) { result in
                    if case .failure(let error) = result { failures.withLock { $0.count += 1; $0.first = $0.first ?? error } }
                }
            }
        } catch {
            await producer.close(timeout: .seconds(1))
            throw error
        }
        await producer.close()
        try failIfAnyFailed()
    }

    /// Measures a run: rate after the warm-up, CPU per 1,000 events, peak RSS.
    ///
    /// - Throws: the first error of `run` as soon as it comes (without waiting for the rest of the run), or
    ///   ``PipelineBenchmarkError`` when no event finished for ``stallTimeout``.
    func measure(
        _ name: String,
        processed: @escaping @Sendable () -> Int,
        run: @escaping @Sendable () async throws -> Void
    ) async throws -> (rate: Double, cpuPer1000: Double, peakRSS: Double) {
        let total = events.count
        let warmUp = self.warmUp
        let stallTimeout = self.stallTimeout
        Self.resetPeakResident()
        let cpuStart = Self.cpuSeconds()
        let started = ContinuousClock.now
        let marks = Locked(RateMarks(total: total, warmUp: warmUp, started: started))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await run() }
            group.addTask {
                var lastReport: ContinuousClock.Instant?
                var lastDone = -1
                var lastAdvance = ContinuousClock.now
                while true {
                    let done = processed()
                    let now = ContinuousClock.now
                    marks.withLock { $0.record(done: done, at: now) }
                    if done != lastDone {
                        lastDone = done
                        lastAdvance = now
                    } else if now - lastAdvance > stallTimeout {
                        throw PipelineBenchmarkError(
                            "the \(name) run finished no event in \(stallTimeout) (\(done) of \(total) done): is the broker still running?"
                        )
                    }
                    if done >= total || lastReport.map({ now - $0 >= .milliseconds(200) }) ?? true {
                        progress(name, done, total)
                        lastReport = now
                    }
                    if done >= total { return }
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            // The first failure ends the measurement at once and cancels the rest, where waiting for every task
            // would wait for ever on those that end only once every event is done.
            while try await group.next() != nil {}
        }
        let cpu = Self.cpuSeconds() - cpuStart
        let peak = Self.peakResidentMegabytes()
        let rate = marks.withLock { $0.rate(now: .now) }
        return (rate, cpu / Double(total) * 1000, peak)
    }

    /// Resets the process's peak RSS (`VmHWM`) to its current RSS, so the next reading is the next run's peak.
    static func resetPeakResident() {
        // "5" resets the peak resident set size (Linux 4.0 and later); elsewhere the peak stays process-wide.
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    /// Process CPU seconds so far (user + system), from `/proc/self/stat`.
    static func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name; utime and stime are the 12th and 13th of them, in clock ticks.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The process's peak resident set size (`VmHWM` in `/proc/self/status`), in MiB.
    public static func peakResidentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kilobytes / 1024
    }

    /// The malloc implementation this process allocates through, by the library mapped into it: `jemalloc` (what the
    /// `campaign-pipeline` executable links on Linux), `mimalloc` or `tcmalloc` (when preloaded), otherwise
    /// `glibc`. The figures depend on it, so the report names it.
    public static func activeAllocator() -> String {
        // Read to the end: /proc files report a size of 0, and the map is longer than one read.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/maps"), let data = try? handle.readToEnd() else { return "unknown" }
        try? handle.close()
        let maps = String(decoding: data, as: UTF8.self)
        for (library, name) in [("/libjemalloc.", "jemalloc"), ("/libmimalloc.", "mimalloc"), ("/libtcmalloc", "tcmalloc")] where maps.contains(library) {
            return name
        }
        return "glibc"
    }

    /// Queues a record, waiting while librdkafka's local queue is full.
    static func enqueue(
        _ producer: KafkaProducer,
        _ record: KafkaProducerRecord,
        _ handler: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) async throws {
        try await waitingWhileQueueFull { () throws(KafkaError) in try producer.produce(record, onDelivery: handler) }
    }

    /// Queues a record, waiting while librdkafka's local queue is full; `receiver` hears of its delivery.
    static func enqueue(_ producer: KafkaProducer, _ record: KafkaProducerRecord, _ receiver: KafkaDeliveryReceiver) async throws {
        try await waitingWhileQueueFull { () throws(KafkaError) in try producer.produce(record, reportingTo: receiver) }
    }

    /// Calls `produce` again (after a millisecond) while it fails because the local queue is full.
    private static func waitingWhileQueueFull(_ produce: () throws(KafkaError) -> Void) async throws {
        while true {
            do throws(KafkaError) {
                try produce()
                return
            } catch where error.librdkafkaName == "_QUEUE_FULL" {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
    }
}

/// What a run's rate is measured between: the first sample past the warm-up, with the events done by then (counted
/// from there, not from the warm-up's exact end, whose time no sample saw), and the first sample with every event done.
struct RateMarks: Sendable {
    let total: Int
    let warmUp: Int
    let started: ContinuousClock.Instant
    private(set) var warm: (at: ContinuousClock.Instant, done: Int)?
    private(set) var end: ContinuousClock.Instant?

    init(total: Int, warmUp: Int, started: ContinuousClock.Instant) {
        self.total = total
        self.warmUp = warmUp
        self.started = started
    }

    /// One sample: `done` events finished by `now`.
    mutating func record(done: Int, at now: ContinuousClock.Instant) {
        if warm == nil, done >= warmUp { warm = (now, done) }
        if end == nil, done >= total { end = now }
    }

    /// The events finished after the warm-up's sample over the time from it to the end (`now` when no sample saw
    /// the end); the whole run's rate when the run ended within one sample of the warm-up's end (a small run).
    func rate(now: ContinuousClock.Instant) -> Double {
        let end = end ?? now
        if let warm, end > warm.at, warm.done < total {
            return Double(total - warm.done) / (end - warm.at).inSeconds
        }
        return Double(total) / max(0.001, (end - started).inSeconds)
    }
}

/// A benchmark run that could not finish.
public struct PipelineBenchmarkError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Where the benchmark runs: the bootstrap address and how to create a topic.
public struct BenchmarkCluster: Sendable {
    /// `host:port` of the broker.
    public var bootstrapServers: String
    /// Creates a topic with a partition count (a no-op for a broker started with every topic already).
    public var createTopic: @Sendable (String, Int32) throws(KafkaError) -> Void

    /// A cluster from its two parts.
    public init(bootstrapServers: String, createTopic: @escaping @Sendable (String, Int32) throws(KafkaError) -> Void) {
        self.bootstrapServers = bootstrapServers
        self.createTopic = createTopic
    }

    /// An embedded broker in this process.
    public static func inProcess(_ kafka: EmbeddedKafka) -> BenchmarkCluster {
        BenchmarkCluster(bootstrapServers: kafka.bootstrapServers) { name, partitions throws(KafkaError) in
            try kafka.createTopic(name, partitions: partitions)
        }
    }
}

/// A value behind a lock, shareable between tasks and librdkafka's threads (for counters and marks that
/// escaping callbacks update).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// Wraps `value`.
    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with the value locked.
    public func withLock<Result>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        mutex.withLock(body)
    }
}
