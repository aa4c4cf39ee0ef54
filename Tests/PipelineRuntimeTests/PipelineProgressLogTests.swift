import Foundation
import KafkaClient
import Logging
import PipelineCore
@testable import PipelineRuntime
import Testing
import TestSupport

/// A run with work logs where it is every `processing.progressLogSeconds`: a batch (`run --until-idle`) used to print
/// nothing between "Consuming" and "Pipeline stopped".
@Suite("run logs its progress while it has work", .timeLimit(.minutes(2)))
struct PipelineProgressLogTests {
    /// Half are timer events, whose outcome is counted before their timer record is acknowledged: the count in flight
    /// then falls to 0 after the counts stopped moving, and the last line must say so (found by review: it ended on
    /// `inFlight=16`).
    @Test("Progress lines count what was read and finished, the last shows the final counts, and an idle run logs none")
    func progressIsLoggedWhileThereIsWork() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let factory = try EventFactory()
            let sends = (0..<30).map { index in
                let sample = index.isMultiple(of: 2) ? "basic-fcm" : "timer-fcm"
                return ("user-\(index)", JSONValue.object(factory.event(sample, id: "progress-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(sends, to: configuration.topics.sends, kafka: kafka)
            var configuration = configuration
            configuration.progressLogInterval = .milliseconds(200)
            let recorder = LogRecorder()
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: recorder.logger(level: .info))
            try await runUntilIdle(pipeline, timeout: .seconds(60))

            let lines = recorder.lines.filter { $0.message == "Progress" }
            let last = try #require(lines.last, "no Progress line in \(recorder.lines.map(\.message))")
            // Named as the "Pipeline stopped" line names them.
            let stopped = try #require(recorder.lines.last { $0.message == "Pipeline stopped" })
            #expect(last.metadata["events"] == "30")
            #expect(last.metadata["finished"] == "30")
            #expect(last.metadata["inFlight"] == "0")
            #expect(last.metadata["assignedPartitions"] == "2")
            #expect(last.metadata["lag"] == "0", "every event of both partitions finished")
            for key in ["events", "delivered", "failed", "rejected", "expired", "suppressed", "timerExpiries"] {
                #expect(last.metadata[key] == stopped.metadata[key], "\(key)")
            }
            for key in ["eventsPerSecond", "finishedPerSecond", "pausedPartitions", "pendingTimers"] {
                #expect(last.metadata[key] != nil, "\(key)")
            }
            // The run was idle for a second (five intervals) before it stopped: after the line with the final counts,
            // none repeats them. (The lag is measured just before the other counts are read, so the line before may show
            // the same counts with events it measured as not finished.)
            #expect(lines.count(where: { $0.metadata["finished"] == "30" && $0.metadata["inFlight"] == "0" && $0.metadata["lag"] == "0" }) == 1)
        }
    }

    @Test("a line is due when anything changed, the count in flight too, or while work is in flight")
    func whenALineIsDue() {
        typealias Counts = CampaignPipeline.ProgressCounts
        let finished = Counts(events: 30, outcomes: [.delivered: 30], timerExpiries: 0, inFlight: 0)
        var timerPending = finished
        timerPending.inFlight = 16
        // The outcomes stopped moving with timer records unacknowledged; then they were.
        #expect(CampaignPipeline.logsProgress(finished, since: timerPending))
        #expect(!CampaignPipeline.logsProgress(finished, since: finished), "idle: no line")
        #expect(CampaignPipeline.logsProgress(timerPending, since: timerPending), "stuck work is shown every interval")
        var expired = finished
        expired.timerExpiries = 1
        #expect(CampaignPipeline.logsProgress(expired, since: finished))
        // The lag: a change is shown; one that stays put is not (a partition ending in a transaction marker keeps one).
        var waiting = finished
        waiting.lag = 200
        #expect(CampaignPipeline.logsProgress(waiting, since: finished))
        var marker = finished
        marker.lag = 1
        #expect(!CampaignPipeline.logsProgress(marker, since: marker))
    }

    /// With the brokers gone, each look-up of a partition's end goes on past its timeout on a thread of its own: failed
    /// measurements are tried again less and less often.
    @Test("a lag measurement that failed is tried again after 2, 4, 8, … intervals, at most 5 minutes")
    func lagBackoff() {
        let interval = Duration.seconds(30)
        #expect(CampaignPipeline.lagBackoff(afterFailures: 0, interval: interval) == .zero)
        #expect((1...4).map { CampaignPipeline.lagBackoff(afterFailures: $0, interval: interval) } == [.seconds(60), .seconds(120), .seconds(240), .seconds(300)])
        #expect(CampaignPipeline.lagBackoff(afterFailures: 1_000, interval: interval) == .seconds(300))
        #expect(CampaignPipeline.lagBackoff(afterFailures: 3, interval: .milliseconds(200)) == .milliseconds(1_600))
    }

    @Test("processing.progressLogSeconds sets the interval; 0 turns the lines off")
    func intervalIsConfigured() throws {
        #expect(PipelineConfiguration(bootstrapServers: ["k:9092"]).progressLogInterval == .seconds(30))
        for (written, interval) in [("0", Duration.zero), ("5", .seconds(5))] {
            let file = try #require(try JSONValue(parsing: Array(#"{"processing": {"progressLogSeconds": \#(written)}}"#.utf8)).objectValue)
            #expect(try PipelineConfiguration.load(file: file, environment: [:]).progressLogInterval == interval)
        }
        let negative = try #require(try JSONValue(parsing: Array(#"{"processing": {"progressLogSeconds": -1}}"#.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: negative, environment: [:]) }
        #expect(error?.key == "processing.progressLogSeconds")
    }
}
