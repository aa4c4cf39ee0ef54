import ArgumentParser
import Foundation
@testable import CampaignPipelineCLI
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime
import ServiceLifecycle
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

    /// Refused before anything is read: a range whose end is not after its start, the live pipeline's group (a
    /// replay commits in its group), and `group.id` as a pass-through property (it would override the replay's group).
    /// The range lookup uses the pipeline's Kafka properties: an invalid one fails it at once, naming the property,
    /// where the lookup used to ignore them (and connect without TLS or SASL).
    @Test("bad ranges, the live group and group.id are refused; the range lookup uses the Kafka properties")
    func refusesWhatWouldReplayTheWrongThing() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let base = ["replay", "--bootstrap-servers", "127.0.0.1:1"]
        let backwards = try await runProcess(executable, base + ["--from", "2026-11-26T00:00:00Z", "--to", "2026-11-20T00:00:00Z"])
        #expect(backwards.status != 0)
        #expect(backwards.stderr.contains("is not before --to"), "\(backwards.stderr)")
        let live = try await runProcess(executable, base + ["--from", "beginning", "--group", "campaign-pipeline"])
        #expect(live.status == 64, "a usage error, as the other groups a replay cannot use: \(live.stderr)")
        #expect(live.stderr.contains("live pipeline's consumer group"), "\(live.stderr)")
        let group = try await runProcess(executable, base + ["--from", "beginning", "--kafka-property", "group.id=campaign-pipeline"])
        #expect(group.status != 0)
        #expect(group.stderr.contains("--kafka-property group.id"), "\(group.stderr)")
        for (option, value) in [("--group", ""), ("--topic", "")] {
            let empty = try await runProcess(executable, base + ["--from", "beginning", option, value])
            #expect(empty.status == 64, "\(option) '\(value)': \(empty.stderr)")
            #expect(empty.stderr.contains("\(option) must not be empty"), "\(empty.stderr)")
        }
        // A prefix no topic name may start with: refused at once, naming the character, not when the first record is produced.
        let prefix = try await runProcess(executable, base + ["--from", "beginning", "--output-prefix", "back fill."])
        #expect(prefix.status == 64, "\(prefix.stderr)")
        #expect(prefix.stderr.contains("--output-prefix 'back fill.' contains ' '"), "\(prefix.stderr)")
        let invalid = try await runProcess(executable, base + ["--from", "beginning", "--dry-run", "--kafka-property", "socket.timeout.ms=soon"])
        #expect(invalid.status == 78, "a setting it cannot use: \(invalid.stderr)")
        #expect(invalid.stderr.contains("configuration: --kafka-property: property 'socket.timeout.ms' (value not shown)"), "\(invalid.stderr)")
        #expect(invalid.stderr.contains("socket.timeout.ms"), "\(invalid.stderr)")
        #expect(!invalid.stdout.contains("Replaying"), "\(invalid.stdout)")
    }

    /// A cluster that does not answer is not an interrupted replay (1, resume it) nor a usage error (64): a script or
    /// job tells "try again later" by its own status.
    @Test("replay and run exit with status 69 when no broker answers")
    func unreachableClusterHasItsOwnStatus() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        async let replay = runProcess(executable, ["replay", "--bootstrap-servers", "127.0.0.1:1", "--from", "beginning"])
        async let run = runProcess(executable, ["run", "--bootstrap-servers", "127.0.0.1:1"])
        // Awaited one by one: a tuple literal holding an `await` is miscompiled (AsyncTupleMiscompileTests).
        let replayResult = try await replay
        let runResult = try await run
        for (command, result) in [("replay", replayResult), ("run", runResult)] {
            #expect(result.status == 69, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("Error: Kafka broker unreachable"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("no broker of 127.0.0.1:1 answered"), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("Usage:"), "\(command): \(result.stderr)")
        }
    }

    /// Found by review: each of these used to do something else than the operator meant, without saying so.
    @Test("a --to that leaves partitions out is refused; a replay that sends nowhere needs no sink credentials; a finished group says so")
    func replayAsTheOperatorMeantIt() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let (kafka, sampleCount) = try await clusterWithSamples(
            extraTopics: ["replay.push.fcm", "replay.push.apns", "replay.campaign.analytics", "replay.campaign.dlq"],
            logger: Self.logger
        )
        defer { kafka.shutdown() }
        let base = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--log-level", "warning"]

        // Partition 1 would have been replayed to its end (and sent, with --deliver): a usage error naming --to.
        let partial = try await runProcess(executable, base + ["--from", "beginning", "--to", "0:0", "--deliver"])
        #expect(partial.status == 64, "\(partial.stderr)")
        #expect(partial.stderr.contains("--to: gives no end for partition 1"), "\(partial.stderr)")
        // With replay's usage, as an error found while parsing has (the root's usage was printed).
        #expect(partial.stderr.contains("Usage: campaign-pipeline replay "), "\(partial.stderr)")
        #expect(!partial.stdout.contains("Replaying"), "\(partial.stdout)")

        // Routes to FCM with no credentials: a replay into replay.* topics does not use the sink.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fcm.json")
        try Data(#"{"sinks":{"fcm":["fcm"]}}"#.utf8).write(to: config)
        let dryRun = try await runProcess(executable, base + ["--config", config.path, "--from", "beginning", "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        let delivering = try await runProcess(executable, base + ["--config", config.path, "--from", "beginning", "--deliver"])
        #expect(delivering.status == 78, "\(delivering.stderr)")
        #expect(delivering.stderr.contains("fcm.serviceAccountFile"), "\(delivering.stderr)")

        // A group given again resumes; once it has replayed the whole range there is nothing left, and it says so.
        let group = "replay-again-\(UUID().uuidString.prefix(6))"
        let first = try await runProcess(executable, base + ["--from", "beginning", "--group", group])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("Replayed \(sampleCount) records"), "\(first.stdout)")
        let again = try await runProcess(executable, base + ["--from", "beginning", "--group", group])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("group \(group) has already replayed this whole range"), "\(again.stdout)")
        #expect(!again.stdout.contains("Replayed 0 records"), "\(again.stdout)")
    }

    /// The rate since the start would stay high for minutes while nothing moves, and its ETA count down.
    @Test("the progress rate is that of the last seconds, and a replay where nothing moves says so")
    func progressRateIsRecent() {
        var recent = RecentRate()
        #expect(recent.rate == nil)
        for second in 0...20 { recent.add(seconds: Double(second), done: Int64(second) * 1_000) }
        #expect(recent.rate == 1_000)
        #expect(recent.stalledSeconds() == nil)
        #expect(recent.remainingSeconds(toReach: 30_000) == 10)
        for second in 21...40 { recent.add(seconds: Double(second), done: 20_000) }
        #expect(recent.rate == 0, "nothing moved in the last ten seconds")
        #expect(recent.stalledSeconds() == 20)
        #expect(recent.remainingSeconds(toReach: 30_000) == nil, "no ETA while nothing moves")
        recent.add(seconds: 41, done: 20_500)
        #expect(recent.stalledSeconds() == nil)
        #expect(recent.rate == 50)
    }

    /// Found by a user's trial: the stalled line sent the reader to a log that said nothing yet; the resume hint left out
    /// the range (another range is refused); the interrupted summary did not add up to the records read; and the
    /// --from error offered 'end', which --from then refuses.
    @Test("a stalled, resumable or interrupted replay says what it knows")
    func replaySaysWhatItKnows() throws {
        #expect(ProgressDisplay.stalledNote(seconds: 20, notDone: [0, 3]) == "  no progress for 20 s; partitions 0, 3 not done")
        #expect(ProgressDisplay.stalledNote(seconds: 12.4, notDone: [5]) == "  no progress for 12 s; partition 5 not done")
        #expect(ProgressDisplay.stalledNote(seconds: 30, notDone: []) == "  no progress for 30 s")
        #expect(
            ProgressDisplay.stalledNote(seconds: 10, notDone: Array(0..<11))
                == "  no progress for 10 s; partitions 0, 1, 2, 3, 4, 5, 6, 7 and 3 more not done"
        )

        let command = try ReplayCommand.parse(["--from", "2026-11-20T00:00:00Z", "--to", "0:5,1:7", "--group", "g"])
        #expect(command.resumeOptions(group: "g") == "--group g --from 2026-11-20T00:00:00Z --to 0:5,1:7")
        // The destination and the topic too: without them the hinted command is refused (another destination), or
        // replays another topic (found by review).
        let elsewhere = try ReplayCommand.parse(["--from", "beginning", "--topic", "old sends", "--output-prefix", "bf."])
        #expect(elsewhere.resumeOptions(group: "it's") == #"--group 'it'\''s' --from beginning --to end --topic 'old sends' --output-prefix bf."#)
        let delivering = try ReplayCommand.parse(["--from", "beginning", "--deliver"])
        #expect(delivering.resumeOptions(group: "g") == "--group g --from beginning --to end --deliver")
        // A prefix with --deliver would be ignored (it was, silently): refused, naming both.
        #expect {
            try ReplayCommand.parse(["--from", "beginning", "--deliver", "--output-prefix", "bf."])
        } throws: { error in
            ReplayCommand.message(for: error).contains("--output-prefix 'bf.' and --deliver exclude each other")
        }

        let summary = ReplayCommand.interruptedSummary(read: 14_013, outcomes: [.delivered: 2_660, .rejected: 4], unfinished: 11_349, isDryRun: false)
        #expect(
            summary
                == "Interrupted after 14013 records read: delivered 2660, failed 0, rejected 4, expired 0, suppressed 0, unfinished 11349 (replayed again when the replay resumes)"
        )
        #expect(ReplayCommand.interruptedSummary(read: 3, outcomes: [.delivered: 3], unfinished: 0, isDryRun: true).hasSuffix("suppressed 0, unfinished 0"))

        for (option, words) in [("--from", "'beginning'"), ("--to", "'end'")] {
            let arguments = option == "--from" ? ["--from", "garbage"] : ["--from", "beginning", "--to", "garbage"]
            #expect {
                try ReplayCommand.parse(arguments)
            } throws: { error in
                let message = ReplayCommand.message(for: error)
                return message.contains("\(option): 'garbage' is not \(words), an RFC 3339 time")
            }
        }
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
        #expect(result.stdout.contains("Replaying up to \(sampleCount) records"), "\(result.stdout)")
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

    /// A dry run commits nothing, and ignores what its group committed before: run again with its --group, it starts
    /// over. It used to print the same advice to resume with the group as a real replay.
    @Test("a dry run does not offer to resume with its group")
    func dryRunOffersNoResume() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let (kafka, sampleCount) = try await clusterWithSamples(logger: Self.logger)
        defer { kafka.shutdown() }
        let result = try await runProcess(executable, ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--dry-run", "--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Replayed \(sampleCount) records (dry run: nothing written; the outcomes they would have had): delivered "), "\(result.stdout)")
        #expect(!result.stdout.contains("resume"), "\(result.stdout)")
        #expect(result.stdout.contains("commits nothing"), "\(result.stdout)")
    }

    /// A replay's look-ups (the range's offsets, what its group committed) logged without `kafka.role` and showed the
    /// brokers the default `client.id` (`campaign-pipeline`), which ACLs and quotas by role could not name.
    @Test("every Kafka client of a replay logs its role; the look-ups are replay-lookup")
    func replayClientsNameTheirRoles() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let live = PipelineConfiguration(bootstrapServers: [])
        let replayTopics = live.topics.prefixingOutputs(with: ReplayCommand.defaultOutputPrefix)
        let (kafka, sampleCount) = try await clusterWithSamples(extraTopics: replayTopics.all.filter { !live.topics.all.contains($0) }, logger: Self.logger)
        defer { kafka.shutdown() }
        let group = "roles-\(UUID().uuidString.prefix(6))"
        let result = try await runProcess(
            executable,
            ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group, "--log-level", "debug"]
        )
        #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
        #expect(result.stdout.contains("Replayed \(sampleCount) records"), "\(result.stdout)")
        let clientLines = result.stderr.split(separator: "\n").filter { $0.contains("kafka.client=") }
        #expect(!clientLines.isEmpty, "\(result.stderr.suffix(2_000))")
        for line in clientLines where !line.contains("kafka.role=") { Issue.record("a Kafka client's line without its role: \(line)") }
        let lookups = clientLines.filter { $0.contains("kafka.role=replay-lookup") && $0.contains("Consumer closed") }
        #expect(lookups.count == 2, "the range's look-up and the group's: \(lookups)")
        #expect(KafkaClientRole.replayLookup.clientID == "campaign-pipeline-replay-lookup")
    }

    /// A replay whose pipeline fails as it loses its lease (a look-up timed out across the pause that cost the lease)
    /// ends as the loss, naming the failure: whether to run it again depends on the other replay, which may hold the
    /// lease now. One that fails while it holds its lease ends with its failure. The failure here comes at once: the
    /// group has a commit past the range's start that names no range, which the pipeline refuses to resume from. A
    /// replay that finished its range just after the loss (its watch had not seen it) also tells the loss.
    @Test("a replay that fails or finishes as it loses its lease ends as the loss, naming the failure; holding it, with the failure", .timeLimit(.minutes(3)))
    func failureAsTheLeaseIsLost() async throws {
        let live = PipelineConfiguration(bootstrapServers: [])
        let replayTopics = live.topics.prefixingOutputs(with: ReplayCommand.defaultOutputPrefix)
        let (kafka, _) = try await clusterWithSamples(extraTopics: replayTopics.all.filter { !live.topics.all.contains($0) }, logger: Self.logger)
        defer { kafka.shutdown() }
        var configuration = PipelineConfiguration(bootstrapServers: [kafka.bootstrapServers])
        configuration.topics = replayTopics
        configuration.sinks.routeToKafkaOnly()
        configuration.untilIdle = nil
        let lookup = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil), logger: Self.logger)
        let ranges: [KafkaTopicPartition: Range<Int64>]
        do {
            ranges = try await ReplayBoundary.resolve(from: .beginning, to: .end, topic: configuration.topics.sends, using: lookup)
            await lookup.close()
        } catch {
            await lookup.close()
            throw error
        }
        let plan = ReplayPlan(ranges: ranges)
        let partition = try #require(ranges.first { !$0.value.isEmpty }?.key)

        /// A new group, with another client's commit one past the start of the range in `partition` when `foreignCommit`.
        func newGroup(foreignCommit: Bool) async throws -> String {
            let group = "nightly-\(UUID().uuidString.prefix(6))"
            guard foreignCommit else { return group }
            let other = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: group), logger: Self.logger)
            let offset = KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: ranges[partition]!.lowerBound + 1)
            do {
                try await other.commit([KafkaOffsetAndMetadata(offset, metadata: "")], within: .seconds(10))
                await other.close()
            } catch {
                await other.close()
                throw error
            }
            return group
        }
        /// Without `watching`, the lease's watch is not run: it has not seen the loss when the run ends.
        func replay(in group: String, under lease: ReplayLease, watching: Bool) async throws -> (CampaignPipeline, ReplayCommand.LeasedRunEnding) {
            var replayed = configuration
            replayed.groupID = group
            let pipeline = CampaignPipeline(configuration: replayed, registry: BuiltinTemplates.registry, replay: plan, logger: Self.logger)
            do {
                let ending = try await ReplayCommand.run(pipeline, under: lease, logger: Self.logger) { alongside in
                    try await signalledServiceGroup(running: pipeline, alongside: watching ? alongside : [], logger: Self.logger).run()
                }
                await lease.release()
                return (pipeline, ending)
            } catch {
                await lease.release()
                throw error
            }
        }

        // Held (with the default 10 s session, which no stall of a busy test run outlasts).
        let held = try await newGroup(foreignCommit: true)
        let heldLease = try await ReplayLease.acquire(group: held, configuration: configuration, logger: Self.logger)
        let failure = await #expect(throws: ReplayGroupConflict.self, "the lease held: the failure itself") {
            try await replay(in: held, under: heldLease, watching: true)
        }
        #expect(failure?.group == held)

        // Lost: COORDINATOR_NOT_AVAILABLE to every heartbeat, the session (6 s) runs out, and librdkafka forgets the id.
        var shortSession = configuration
        shortSession.consumerProperties = ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500"]
        let failing = try await newGroup(foreignCommit: true)
        let finishing = try await newGroup(foreignCommit: false)
        let failingLease = try await ReplayLease.acquire(group: failing, configuration: shortSession, logger: Self.logger)
        let finishingLease: ReplayLease
        do {
            finishingLease = try await ReplayLease.acquire(group: finishing, configuration: shortSession, logger: Self.logger)
        } catch {
            await failingLease.release()
            throw error
        }
        try kafka.failRequests(apiKey: 12, count: 1_000, errorCode: 15)
        // Asked until the ids tell it (`loss(within:)` waits for it).
        let failingLoss = await failingLease.loss(within: .seconds(40))
        let finishingLoss = await finishingLease.loss(within: .seconds(40))
        #expect(failingLoss != nil && finishingLoss != nil, "the sessions timed out within 40 s")
        // The ordering this is about: a watch that saw the loss first stops the pipeline before it fails or finishes
        // (the command-line test of a stopped replay covers that one).
        let failed: ReplayCommand.LeasedRunEnding
        do {
            (_, failed) = try await replay(in: failing, under: failingLease, watching: false)
        } catch {
            await finishingLease.release()
            throw error
        }
        #expect(failed.lost.map(String.init(describing:))?.hasPrefix("the replay lost its lease of --group \(failing): ") == true, "\(String(describing: failed.lost))")
        #expect((failed.failure as? ReplayGroupConflict)?.group == failing, "names the failure: \(String(describing: failed.failure))")
        #expect(!failed.stoppedByLoss, "not stopped by the loss: it may have committed after it")
        #expect(ReplayCommand.howItStopped(failed).hasPrefix("It failed as it lost the lease (--group \(failing) has committed offset"), "\(ReplayCommand.howItStopped(failed))")
        let (pipeline, finished) = try await replay(in: finishing, under: finishingLease, watching: false)
        #expect(pipeline.hasFinishedReplay)
        #expect(finished.lost.map(String.init(describing:))?.hasPrefix("the replay lost its lease of --group \(finishing): ") == true, "\(String(describing: finished.lost))")
        #expect(finished.failure == nil && !finished.stoppedByLoss)
        // (It finished its range: the command ends it as usual, with a note of the loss.) Had it been signalled
        // instead, its error would say that it may have committed after the loss; stopped by the loss, that it did not.
        #expect(ReplayCommand.howItStopped(finished) == "It was stopped before the loss was known, and may have committed its progress once more")
        #expect(ReplayCommand.howItStopped(ReplayCommand.LeasedRunEnding(lost: finished.lost, stoppedByLoss: true)).hasPrefix("It stopped, and committed nothing once it knew"))
    }
}
