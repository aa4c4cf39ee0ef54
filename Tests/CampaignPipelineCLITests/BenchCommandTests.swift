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
        #if os(Linux)
        // The executable links jemalloc (Package.swift, Sources/ProcessAllocator): the figures README quotes need it.
        #expect(report.objectValue?["allocator"] == "jemalloc")
        #endif
    }
}
