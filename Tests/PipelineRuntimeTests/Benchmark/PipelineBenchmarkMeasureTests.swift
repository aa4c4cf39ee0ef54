import Foundation
import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import TestSupport
import Testing

/// What `bench` reports, and that its runs end: found by review, a failed run waited for ever for events that would
/// never finish, and the rate counted events finished before its clock started.
@Suite("Benchmark runs: the rate after the warm-up, and failures that end the run", .timeLimit(.minutes(2)))
struct PipelineBenchmarkMeasureTests {
    /// A benchmark of `count` basic FCM events on `partitions` partitions of `cluster`.
    private func benchmark(on cluster: BenchmarkCluster, count: Int = 100, partitions: Int32 = 1, window: Int = 10) throws -> PipelineBenchmark {
        let events = BenchmarkEvents(samples: [try #require(Fixtures.sample("basic-fcm").objectValue)], count: count)
        return PipelineBenchmark(
            cluster: cluster,
            events: events,
            partitions: partitions,
            windowPerPartition: window,
            registry: builtinRegistry,
            logger: testLogger
        ) { _, _, _ in }
    }

    private static let noCluster = BenchmarkCluster(bootstrapServers: "127.0.0.1:1") { _, _ in }

    @Test("the warm-up is the first 5 %, at least the feeder's window, at most half the run")
    func warmUp() throws {
        #expect(try benchmark(on: Self.noCluster, count: 1_000).warmUp == 50)
        #expect(try benchmark(on: Self.noCluster, count: 100).warmUp == 10, "the window, 10 events")
        let wide = try benchmark(on: Self.noCluster, count: 200_000, partitions: 6, window: 1_000)
        #expect(wide.warmUp == 10_000, "at N = 200,000 on 6 partitions the 5 % is the larger")
        let small = try benchmark(on: Self.noCluster, count: 300, partitions: 6, window: 1_000)
        #expect(small.warmUp == 150, "half the run")
    }

    /// Samples as `measure` takes them (every few milliseconds): 5 events done, then 60 (the first past the warm-up of
    /// 10), 80, and all 100 a second after the 60. The rate is the 40 finished after that sample over that second, not
    /// 90 (everything after the warm-up) over it. Given, not timed: a run's timing on a loaded machine is no test.
    @Test("the rate counts the events finished after its clock started, over the time since")
    func rateAfterTheWarmUp() {
        let started = ContinuousClock.now
        var marks = RateMarks(total: 100, warmUp: 10, started: started)
        for (done, at) in [(5, 0.5), (60, 1.0), (80, 1.5), (100, 2.0), (100, 2.5)] {
            marks.record(done: done, at: started + .milliseconds(Int(at * 1000)))
        }
        #expect(marks.rate(now: started + .seconds(9)) == 40, "the end is the first sample with every event done")

        // Everything done by the first sample past the warm-up: the whole run's rate.
        var small = RateMarks(total: 100, warmUp: 10, started: started)
        small.record(done: 100, at: started + .seconds(1))
        #expect(small.rate(now: started + .seconds(9)) == 100)
        // No sample saw the end: up to now.
        let unfinished = RateMarks(total: 100, warmUp: 10, started: started)
        #expect(unfinished.rate(now: started + .seconds(4)) == 25)
    }

    @Test("a run that finishes nothing for the stall timeout fails, naming the run and how far it got")
    func stalledRunFails() async throws {
        var bench = try benchmark(on: Self.noCluster)
        bench.stallTimeout = .milliseconds(500)
        let start = ContinuousClock.now
        await #expect {
            try await bench.measure("stuck", processed: { 7 }) {
                try await Task.sleep(for: .seconds(3600))
            }
        } throws: { error in
            "\(error)".contains("the stuck run finished no event") && "\(error)".contains("7 of 100 done")
        }
        // Far from the hour the run would wait; a busy parallel test run has taken 10 to 11 s here.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    /// The timers topic has a partition more than the sends topic, so the pipeline refuses to start: the bench used
    /// to wait for ever for events it would never process.
    @Test("a pipeline run that cannot start fails the bench at once with the pipeline's error")
    func pipelineThatCannotStart() async throws {
        let kafka = try EmbeddedKafka(brokers: 1, logger: testLogger)
        defer { kafka.shutdown() }
        let timers = PipelineBenchmark.topicPlan(partitions: 1).first { $0.name.hasPrefix("pipeline.") && $0.name.hasSuffix(".timers") }?.name
        let cluster = BenchmarkCluster(bootstrapServers: kafka.bootstrapServers) { name, partitions in
            try? kafka.createTopic(name, partitions: name == timers ? partitions + 1 : partitions)
        }
        let start = ContinuousClock.now
        await #expect {
            _ = try await benchmark(on: cluster).pipeline()
        } throws: { error in
            "\(error)".contains("partitions")
        }
        #expect(ContinuousClock.now - start < .seconds(30))
    }
}
