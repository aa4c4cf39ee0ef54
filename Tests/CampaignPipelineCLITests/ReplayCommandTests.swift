import Foundation
import KafkaClient
import Logging
import PipelineCore
import Testing

@Suite("campaign-pipeline replay on the command line")
struct ReplayCommandTests {
    static let logger = Logger(label: "replay-cli-tests") { _ in SwiftLogNoOpLogHandler() }

    @Test("the help says that only --deliver touches the live sinks")
    func helpExplainsDeliver() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let help = try await runProcess(executable, ["replay", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--deliver"))
        #expect(help.stdout.contains("LIVE"))
        #expect(help.stdout.contains("replay.push.fcm"))
        let both = try await runProcess(executable, ["replay", "--bootstrap-servers", "x:1", "--from", "beginning", "--deliver", "--dry-run"])
        #expect(both.status != 0)
        #expect(both.stderr.contains("--deliver and --dry-run"))
        let bad = try await runProcess(executable, ["replay", "--bootstrap-servers", "x:1", "--from", "yesterday"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--from"))
    }

    @Test("without --deliver the outputs go to replay.* topics and the live topics get nothing")
    func defaultsToReplayTopics() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let (kafka, sampleCount) = try await clusterWithSamples(
            extraTopics: ["replay.push.fcm", "replay.push.apns", "replay.campaign.analytics", "replay.campaign.dlq"],
            logger: Self.logger
        )
        defer { kafka.shutdown() }

        let result = try await runProcess(executable, ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Replaying \(sampleCount) records"))
        #expect(result.stdout.contains("--group campaign-pipeline-replay-"), "says how to resume")

        let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil), logger: Self.logger)
        var replayAnalytics: Int64 = 0
        var liveOutputs: Int64 = 0
        for partition in Int32(0)..<2 {
            replayAnalytics += try await consumer.watermarks(topic: "replay.campaign.analytics", partition: partition).high
            for topic in ["push.fcm", "push.apns", "campaign.analytics", "campaign.dlq"] {
                liveOutputs += try await consumer.watermarks(topic: topic, partition: partition).high
            }
        }
        await consumer.close()
        #expect(replayAnalytics == Int64(sampleCount), "one outcome per replayed event")
        #expect(liveOutputs == 0, "nothing written to the live topics")

        // The samples are dated December 2023, and two timers ended on the 25th: judged at each event's time they
        // were live; a replay that sends to phones judges them now, and sends nothing that has ended.
        #expect(result.stdout.contains("expired 0,"), "\(result.stdout)")
        let delivering = try await runProcess(
            executable,
            ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--deliver", "--log-level", "warning"]
        )
        #expect(delivering.status == 0, "\(delivering.stderr)")
        #expect(delivering.stdout.contains("expired 2,"), "\(delivering.stdout)")
    }
}
