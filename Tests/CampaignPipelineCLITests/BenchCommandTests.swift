import Foundation
import PipelineCore
import Testing

@Suite("campaign-pipeline bench (smoke test, tiny N; speed is measured by the command, not asserted here)")
struct BenchCommandTests {
    @Test("a tiny run reports both runs as JSON and passes the accounting check")
    func tinyRun() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let result = try await runProcess(executable, ["bench", "--events", "300", "--partitions", "2", "--json", "--config-directory", Paths.repositoryRoot.appendingPathComponent("Config").path])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONValue(parsing: Array(result.stdout.utf8))
        let runs = try #require(report.objectValue?["runs"]?.arrayValue)
        #expect(runs.compactMap { $0.objectValue?["run"]?.stringValue } == ["relay", "pipeline"])
        for run in runs {
            #expect(run.objectValue?["accounted"] == .bool(true), "\(run.jsonString)")
            #expect(run.objectValue?["events"] == .int(300))
        }
        #expect(report.objectValue?["peakRSSMegabytes"] != nil)
        #expect(report.objectValue?["rounds"] == .int(1))
        #expect(report.objectValue?["medians"] == nil, "one round has no medians")
        #if os(Linux)
        // The executable links jemalloc (Package.swift, Sources/ProcessAllocator): the figures README quotes need it.
        #expect(report.objectValue?["allocator"] == "jemalloc")
        #endif
    }

    /// `bench` runs its broker as a child with `--parent-pid`, so that a bench killed before it can stop the child
    /// (SIGKILL, or a SIGTERM it cannot act on) leaves no broker running.
    @Test("the bench's broker child stops once its parent is gone, and not before")
    func brokerFollowsItsParent() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let shell = URL(fileURLWithPath: "/bin/sh")
        // Given a parent it does not have (process 1): it stops by itself, well within `timeout`'s 20 s.
        let orphan = try await runProcess(shell, ["-c", #"exec timeout 20 "$0" broker --brokers 1 --parent-pid 1"#, executable.path])
        #expect(orphan.status == 0, "\(orphan.stderr)")
        #expect(orphan.stdout.hasPrefix("127.0.0.1:"), "the address comes first")
        // Given its parent (`timeout`, which replaced the shell): it runs until `timeout` stops it after 2 s (124).
        let child = try await runProcess(shell, ["-c", #"exec timeout 2 "$0" broker --brokers 1 --parent-pid $$"#, executable.path])
        #expect(child.status == 124, "\(child.stderr)")
    }

    @Test("rounds run both runs again on a fresh broker each, and report every round and the medians")
    func rounds() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let result = try await runProcess(executable, ["bench", "--events", "200", "--partitions", "2", "--rounds", "2", "--json", "--config-directory", Paths.repositoryRoot.appendingPathComponent("Config").path])
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try JSONValue(parsing: Array(result.stdout.utf8))
        let report = try #require(parsed.objectValue)
        #expect(report["rounds"] == .int(2))
        let runs = (report["runs"]?.arrayValue ?? []).compactMap(\.objectValue)
        try #require(runs.count == 4)
        #expect(runs.compactMap { $0["run"]?.stringValue } == ["relay", "pipeline", "relay", "pipeline"])
        #expect(runs.compactMap { $0["round"] } == [.int(1), .int(1), .int(2), .int(2)])
        // Each round has topics (and a broker) of its own: every event is accounted for once in each.
        for run in runs {
            #expect(run["accounted"] == .bool(true), "\(run)")
            #expect(run["events"] == .int(200))
        }
        let medians = (report["medians"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(medians.compactMap { $0["run"]?.stringValue } == ["relay", "pipeline"])
        for (index, median) in medians.enumerated() {
            // Of two rounds: the mean of the two (of the rates before they were rounded for the report).
            let rates = [runs[index], runs[index + 2]].compactMap { $0["eventsPerSecond"].flatMap(number) }
            let rate = try #require(median["eventsPerSecond"].flatMap(number))
            #expect(abs(rate - (rates[0] + rates[1]) / 2) <= 1)
            let peaks = [runs[index], runs[index + 2]].compactMap { $0["peakRSSMegabytes"].flatMap(number) }
            #expect(median["peakRSSMegabytes"].flatMap(number) == peaks.max())
        }
        let ratios = [0, 2].compactMap { index -> Double? in
            guard let pipeline = runs[index + 1]["eventsPerSecond"].flatMap(number), let relay = runs[index]["eventsPerSecond"].flatMap(number) else { return nil }
            return pipeline / relay
        }
        let ratio = try #require(report["pipelineToRelay"].flatMap(number))
        // Within what rounding the rates to whole events per second moves it (a tiny run's rates can be a few dozen).
        let expected = (ratios[0] + ratios[1]) / 2
        #expect(abs(ratio - expected) <= 0.02 * expected, "the ratio is the median of the rounds' ratios: \(ratio), \(ratios)")
        let cpuRatios = [0, 2].compactMap { index -> Double? in
            guard let pipeline = runs[index + 1]["cpuSecondsPer1000"].flatMap(number), let relay = runs[index]["cpuSecondsPer1000"].flatMap(number) else { return nil }
            return relay / pipeline
        }
        let cpuRatio = try #require(report["relayToPipelineCPUPerEvent"].flatMap(number))
        #expect(abs(cpuRatio - (cpuRatios[0] + cpuRatios[1]) / 2) < 0.01, "the CPU ratio is the median of the rounds' ones")
    }

    /// A JSON number's value (integral ones are read back as `.int`).
    private func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let int): Double(int)
        case .double(let double): double
        default: nil
        }
    }

    @Test("--rounds is checked")
    func roundsAreChecked() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let result = try await runProcess(executable, ["bench", "--rounds", "0"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--rounds must be between 1 and 50, not 0"), "\(result.stderr)")
    }
}
