import Foundation
import KafkaClient
import KafkaWireTestSupport
import Logging
import PipelineCore
import PipelineRuntime
import Synchronization
import TestSupport
import Testing

@Suite("Replaying a range of the sends topic")
struct ReplayTests {
    /// A cluster with the pipeline's topics and the replay's prefixed output topics.
    func withReplayCluster<T>(_ body: (EmbeddedKafka, PipelineConfiguration) async throws -> T) async throws -> T {
        try await withPipelineCluster(partitions: 6) { kafka, configuration in
            for topic in configuration.topics.prefixingOutputs(with: "replay.").all where topic.hasPrefix("replay.") {
                try kafka.createTopic(topic, partitions: 6)
            }
            return try await body(kafka, configuration)
        }
    }

    func replayConfiguration(_ configuration: PipelineConfiguration, group: String = "replay-\(UUID().uuidString.prefix(6))") -> PipelineConfiguration {
        var replay = configuration
        replay.topics = configuration.topics.prefixingOutputs(with: "replay.")
        replay.groupID = group
        replay.untilIdle = nil
        return replay
    }

    func ranges(_ from: ReplayBoundary, _ to: ReplayBoundary, kafka: EmbeddedKafka, topic: String) async throws -> [KafkaTopicPartition: Range<Int64>] {
        let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: nil), logger: testLogger)
        defer { Task { await consumer.close() } }
        return try await ReplayBoundary.resolve(from: from, to: to, topic: topic, using: consumer)
    }

    /// Events of every kind, a few broken, stamped one second apart from `base`.
    func events(_ count: Int, base: Date, startingAt start: Int = 0) throws -> [(key: String, value: [UInt8])] {
        let factory = try EventFactory()
        return (start..<(start + count)).map { index in
            let recipient = "user-\(index % 300)"
            if index % 25 == 3 {
                return (recipient, factory.broken(index, id: "event-\(index)", recipient: recipient).bytes)
            }
            let kind = EventFactory.kinds[index % EventFactory.kinds.count]
            let event = factory.event(kind, id: "event-\(index)", recipient: recipient, occurredAt: base.addingTimeInterval(Double(index)))
            return (recipient, JSONValue.object(event).encoded())
        }
    }

    /// Found by a review of the stop while starting: a replay's start-up looks up its group's committed offsets (up to
    /// 10 s when the group's coordinator does not answer), and a stop then went unheard: the replay failed with the
    /// look-up's error.
    @Test("a stop while the replay looks up its group's committed offsets ends it without an error", .timeLimit(.minutes(3)))
    func stopWhileLookingUpCommittedOffsets() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(20, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends))
            let recorder = LogRecorder()
            let replay = CampaignPipeline(
                configuration: replayConfiguration(configuration),
                registry: builtinRegistry,
                replay: plan,
                logger: recorder.logger(level: .info)
            )
            // FindCoordinator (10) answered COORDINATOR_NOT_AVAILABLE (15): the group's committed offsets stay unknown.
            try kafka.failRequests(apiKey: 10, count: 10_000, errorCode: 15)
            let running = Task { try await replay.run() }
            _ = try await eventually("the replay to read its state topics", timeout: clusterTimeout) {
                recorder.lines.contains { $0.message == "Campaign state loaded" } ? true : nil
            }
            replay.stop()
            // Without the stop heard, this throws the look-up's error (`offsetLookupFailed`).
            try await running.value
            #expect(recorder.lines.contains { $0.message == "Pipeline stopped while starting, before it read any event" })
            #expect(!recorder.lines.contains { $0.message == "Replay assigned" })
        }
    }

    @Test("a replay of what the pipeline processed gives byte-identical payloads and the same analytics, only in replay.* topics")
    func replayMatchesOriginal() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(10_000, base: Date()), to: configuration.topics.sends, kafka: kafka)
            try await CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger).run()

            let live = [configuration.topics.fcm, configuration.topics.apns, configuration.topics.analytics, configuration.topics.deadLetters]
            var liveCounts: [String: Int] = [:]
            for topic in live { liveCounts[topic] = try await readAll(topic, kafka: kafka).count }

            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends))
            #expect(plan.totalCount == 10_000)
            let replayed = replayConfiguration(configuration)
            weak var finished: CampaignPipeline?
            do {
                let replay = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
                finished = replay
                try await replay.run()
            }
            // A replay's partitions are assigned, never revoked: its trackers (which hold the run's completion, and so
            // the pipeline) are let go only because the run lets them go when it ends.
            #expect(finished == nil, "the replay's pipeline is released once its run is over")

            for topic in live {
                #expect(try await readAll(topic, kafka: kafka).count == liveCounts[topic], "nothing new in \(topic)")
            }
            for (original, copy) in [(configuration.topics.fcm, replayed.topics.fcm), (configuration.topics.apns, replayed.topics.apns)] {
                let before = Dictionary(uniqueKeysWithValues: try await readAll(original, kafka: kafka).map { ($0.header("messageId")!, $0.value) })
                let after = Dictionary(uniqueKeysWithValues: try await readAll(copy, kafka: kafka).map { ($0.header("messageId")!, $0.value) })
                #expect(before.count > 0)
                #expect(before == after, "payloads of \(copy) are byte-identical to \(original)")
            }
            func comparable(_ events: [AnalyticsEvent]) -> [String: AnalyticsEvent] {
                Dictionary(uniqueKeysWithValues: events.map { event in
                    var copy = event
                    copy.occurredAt = Timestamp(secondsSince1970: 0)
                    // The sink names the topic written to, which is the replay's own.
                    copy.sink = copy.sink?.replacingOccurrences(of: "kafka:replay.", with: "kafka:")
                    return (event.identity.messageId, copy)
                })
            }
            let originalAnalytics = comparable(try analytics(try await readAll(configuration.topics.analytics, kafka: kafka)))
            let replayAnalytics = comparable(try analytics(try await readAll(replayed.topics.analytics, kafka: kafka)))
            #expect(originalAnalytics.count == 10_000)
            let different = originalAnalytics.filter { replayAnalytics[$0.key] != $0.value }
            #expect(different.isEmpty, "same types, message ids and reasons; \(different.count) differ, e.g. \(different.first.map { "\($0.value) vs \(String(describing: replayAnalytics[$0.key]))" } ?? "")")
            #expect(try await readAll(replayed.topics.deadLetters, kafka: kafka).count == liveCounts[configuration.topics.deadLetters])
        }
    }

    @Test("a replay by time processes exactly the events inside [from, to): the first at from included, the first at to excluded")
    func timeBoundaries() async throws {
        try await withReplayCluster { kafka, configuration in
            let base = Date(timeIntervalSince1970: 1_800_000_000)
            let inputs = try events(600, base: base)
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            let records = inputs.enumerated().map { index, input in
                KafkaProducerRecord(topic: configuration.topics.sends, key: Array(input.key.utf8), value: input.value, timestamp: base.addingTimeInterval(Double(index)))
            }
            for result in await producer.send(contentsOf: records) { _ = try result.get() }
            await producer.close()

            let plan = ReplayPlan(
                ranges: try await ranges(.time(base.addingTimeInterval(100)), .time(base.addingTimeInterval(400)), kafka: kafka, topic: configuration.topics.sends)
            )
            #expect(plan.totalCount == 300)
            let replayed = replayConfiguration(configuration)
            try await CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger).run()
            let outcomes = try analytics(try await readAll(replayed.topics.analytics, kafka: kafka))
            let ids = Set(outcomes.compactMap(\.identity.eventId))
            let withoutId = outcomes.filter { $0.identity.eventId == nil }.count
            let expected = Set((100..<400).map { "event-\($0)" })
            // Unreadable events have no readable id; everything else must be exactly the range.
            #expect(ids.isSubset(of: expected))
            #expect(ids.count + withoutId == 300)
            #expect(ids.contains("event-100"), "the first event at --from is included")
            #expect(!ids.contains("event-400") && !ids.contains("event-99"), "the first event at --to is excluded")
        }
    }

    @Test("producers keep writing during a replay; it stops at the end offsets it captured")
    func stopsAtCapturedEnd() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(2_000, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends))
            #expect(plan.totalCount == 2_000)
            let replayed = replayConfiguration(configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Keep producing while the replay runs.
                    for round in 0..<10 {
                        try await produce(try events(200, base: Date(), startingAt: 10_000 + round * 200), to: configuration.topics.sends, kafka: kafka)
                        try await Task.sleep(for: .milliseconds(200))
                    }
                }
                group.addTask {
                    try await CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger).run()
                }
                try await group.waitForAll()
            }
            let outcomes = try analytics(try await readAll(replayed.topics.analytics, kafka: kafka))
            #expect(outcomes.count == 2_000)
            #expect(!outcomes.contains { ($0.identity.eventId ?? "").hasPrefix("event-1") && ($0.identity.eventId?.count ?? 0) == 11 }, "no event written after the start")
        }
    }

    /// On a topic transactional producers write, each partition's high watermark sits past a transaction marker,
    /// an offset no consumer is given (the markers are written over the Kafka protocol: the mock writes none).
    @Test("a range ending in transaction markers still ends, with every event processed")
    func rangeEndingInTransactionMarkers() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(300, base: Date()), to: configuration.topics.sends, kafka: kafka)
            for partition in Int32(0)..<6 {
                try await TransactionMarkers.append(.commit, topic: configuration.topics.sends, partition: partition, bootstrapServers: kafka.bootstrapServers)
            }
            let ranges = try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends)
            #expect(ranges.count == 6 && ranges.values.allSatisfy { $0.count > 1 }, "every partition ends in a marker after its records")
            let plan = ReplayPlan(ranges: ranges)
            let replay = CampaignPipeline(configuration: replayConfiguration(configuration), registry: builtinRegistry, replay: plan, logger: testLogger)
            // Whether the replay had to be stopped.
            let timedOut = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await replay.run()
                    return false
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))
                    replay.stop()
                    return true
                }
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
            #expect(!timedOut, "the replay ended by itself")
            #expect(replay.statistics.snapshot.totalIn == 300)
            #expect(replay.offsetsDeletedBeforeRead.isEmpty, "markers passed over are not records deleted")
            let outcomes = try analytics(try await readAll(replayConfiguration(configuration).topics.analytics, kafka: kafka))
            #expect(Set(outcomes.map(\.identity.messageId)).count == 300, "every event has its outcome")
        }
    }

    /// A replay's reading went on from the first record still stored when retention had deleted the start of its
    /// range (librdkafka resets a position the partition no longer holds), and the records deleted before it read them
    /// were counted as replayed: only librdkafka's log said so. Each jump of the reading is now checked against the
    /// partition's first offset.
    @Test("records of a replay's range deleted before it reads them are named, and the rest replayed", .timeLimit(.minutes(3)))
    func recordsDeletedBeforeTheyAreRead() async throws {
        try await withReplayCluster { kafka, configuration in
            let partition = KafkaTopicPartition(topic: configuration.topics.sends, partition: 0)
            try await produceInSets(try events(60, base: Date()), to: partition, kafka: kafka)
            // The range is planned while every record is there; the first are deleted before the replay reads them.
            let plan = ReplayPlan(ranges: [partition: 0..<60])
            let low = try await deleteFirstRecords(of: partition, past: 0, before: 60, kafka: kafka)
            let replayed = replayConfiguration(configuration)
            let replay = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
            try await replay.run()
            #expect(replay.hasFinishedReplay)
            #expect(replay.offsetsDeletedBeforeRead == [partition: [0..<low]])
            #expect(replay.statistics.snapshot.totalIn == Int(60 - low))
            let outcomes = try analytics(try await readAll(replayed.topics.analytics, kafka: kafka))
            #expect(outcomes.count == Int(60 - low), "one outcome for each record still stored")
            let numbers = outcomes.compactMap { $0.identity.eventId.flatMap { Int64($0.dropFirst("event-".count)) } }
            #expect(!numbers.isEmpty && numbers.allSatisfy { $0 >= low }, "\(numbers)")
        }
    }

    /// The command line's side of ``recordsDeletedBeforeTheyAreRead()``: `--from` offsets the partition no longer
    /// holds start the range at its first record stored (the offsets before it were said nowhere).
    @Test("campaign-pipeline replay from offsets retention deleted replays the rest, names them, and exits 3")
    func deletedRecordsOnTheCommandLine() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            let partition = KafkaTopicPartition(topic: configuration.topics.sends, partition: 0)
            try await produceInSets(try events(60, base: Date()), to: partition, kafka: kafka)
            let low = try await deleteFirstRecords(of: partition, past: 0, before: 60, kafka: kafka)
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "0:0", "--to", "0:60"]
            let run = try await ChildProcess.run(executable, arguments, environment: childEnvironment(["LOG_LEVEL": "warning"]), timeout: .seconds(120))
            #expect(run.status == 3, "\(run.stderr.suffix(2_000))")
            #expect(run.stdout.contains("Replayed \(60 - low) records"), "\(run.stdout)")
            #expect(run.stderr.contains("up to \(low) records of the range were deleted from campaign.sends"), "\(run.stderr.suffix(2_000))")
            #expect(run.stderr.contains("partition 0 offsets 0..<\(low)"), "\(run.stderr.suffix(2_000))")
            // A range wholly deleted is refused before anything is read, saying so (it named --from's offset as
            // starting where the first record stored is).
            let gone = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "0:0", "--to", "0:\(low - 1)"]
            let refused = try await ChildProcess.run(executable, gone, environment: childEnvironment(["LOG_LEVEL": "warning"]), timeout: .seconds(120))
            #expect(refused.status == 64, "\(refused.stderr.suffix(2_000))")
            #expect(
                refused.stderr.contains("partition 0 ends at offset \(low - 1), but its records before offset \(low) were deleted"),
                "\(refused.stderr.suffix(2_000))"
            )
        }
    }

    /// The group's committed offset after a replay whose ranges end in transaction markers (read through), or whose
    /// last offsets before the end are markers followed by records past it (the first record past the end seen): it
    /// used to stay at the last record + 1, so a second run with the group counted the markers as left to replay,
    /// read, and replayed nothing, instead of saying the group had replayed the whole range.
    @Test("a replay whose ranges end in transaction markers commits each range's end, so its group has nothing left")
    func markersAtTheEndAreCommittedPast() async throws {
        try await withReplayCluster { kafka, configuration in
            let topic = configuration.topics.sends
            try await produce(try events(300, base: Date()), to: topic, kafka: kafka)
            var markers: [Int32: Int64] = [:]
            for partition in Int32(0)..<6 {
                markers[partition] = try await TransactionMarkers.append(.commit, topic: topic, partition: partition, bootstrapServers: kafka.bootstrapServers)
            }
            // Read through: nothing readable follows the markers.
            let throughMarkers = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: topic))
            // Past the end: records follow the markers that end the ranges.
            try await produce(try events(120, base: Date(), startingAt: 1_000), to: topic, kafka: kafka)
            let pastEnd = ReplayPlan(ranges: try await ranges(.beginning, .offsets(markers.mapValues { $0 + 1 }), kafka: kafka, topic: topic))
            for (name, plan) in [("read through", throughMarkers), ("past the end", pastEnd)] {
                let replayed = replayConfiguration(configuration)
                let replay = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await replay.run() }
                    group.addTask {
                        try await Task.sleep(for: .seconds(30))
                        replay.stop()
                    }
                    try await group.next()
                    group.cancelAll()
                }
                #expect(replay.hasFinishedReplay, "\(name): the replay ended by itself")
                #expect(replay.statistics.snapshot.totalIn == 300, "\(name)")
                let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
                let committed = try await check.committedWithMetadata(Array(plan.ranges.keys))
                await check.close()
                for position in committed.map(\.position) {
                    #expect(position.offset == plan.ranges[position.topicPartition]?.upperBound, "\(name): \(position) committed, range \(plan.ranges[position.topicPartition]!)")
                }
                #expect(try plan.remainingCount(after: committed, group: replayed.groupID) == 0, "\(name): the group has replayed the whole range")
            }
        }
    }

    /// The reviewer's reproduction, on the command line: 300 events on 6 partitions, a commit marker after each
    /// partition's records, `replay --from beginning --group G` twice. The second run said "Resuming group G: 6 of the
    /// 306 records are left", read, and printed "Replayed 0 records".
    @Test("campaign-pipeline replay run again with its group after a range ending in markers says the group has replayed it all")
    func finishedGroupOverMarkersOnTheCommandLine() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(300, base: Date()), to: configuration.topics.sends, kafka: kafka)
            for partition in Int32(0)..<6 {
                try await TransactionMarkers.append(.commit, topic: configuration.topics.sends, partition: partition, bootstrapServers: kafka.bootstrapServers)
            }
            let group = "replay-markers-\(UUID().uuidString.prefix(6))"
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
            let environment = childEnvironment(["LOG_LEVEL": "warning"])
            let first = try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            #expect(first.status == 0, "\(first.stderr.suffix(2_000))")
            // 306 offsets, 300 records: the count before the run is of offsets, and says so.
            #expect(first.stdout.contains("Replaying up to 306 records"), "\(first.stdout)")
            #expect(first.stdout.contains("Replayed 300 records"), "\(first.stdout)")
            let again = try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            #expect(again.status == 0, "\(again.stderr.suffix(2_000))")
            #expect(again.stdout.contains("group \(group) has already replayed this whole range"), "\(again.stdout)")
            #expect(!again.stdout.contains("Resuming"), "\(again.stdout)")
            #expect(!again.stdout.contains("Replayed 0 records"), "\(again.stdout)")
        }
    }

    /// A replay whose commits all failed said only "Replayed 300 records" (and logged a warning): run again with its
    /// group, it would replay the whole range again. The summary now says that its progress was not committed.
    @Test("campaign-pipeline replay whose commits fail finishes, and says that its group's progress was not committed")
    func finalCommitFailureIsSaid() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(60, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let group = "replay-unrecorded-\(UUID().uuidString.prefix(6))"
            // Every OffsetCommit (API key 8) of the run fails with GROUP_AUTHORIZATION_FAILED (30), not retried.
            try kafka.failRequests(apiKey: 8, count: 10_000, errorCode: 30)
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
            let run = try await ChildProcess.run(executable, arguments, environment: childEnvironment(["LOG_LEVEL": "warning"]), timeout: .seconds(120))
            #expect(run.status == 0, "every record was replayed: \(run.stderr.suffix(2_000))")
            #expect(run.stdout.contains("Replayed 60 records"), "\(run.stdout)")
            #expect(run.stdout.contains("Note: group \(group)'s last progress was not committed ("), "\(run.stdout)")
            #expect(run.stdout.contains("Group authorization failed") || run.stdout.contains("GROUP_AUTHORIZATION_FAILED"), "names the broker's error: \(run.stdout)")
        }
    }

    /// A replay whose lease group answers slowly used to sit silent for up to a minute before its first line. After
    /// `leaseWaitNotice` (6 s) it says what it waits for, then goes on once the lease is taken.
    @Test("campaign-pipeline replay says that it waits for its group's lease when the lease group answers slowly", .timeLimit(.minutes(3)))
    func slowLeaseIsSaid() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(20, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let group = "replay-slow-lease-\(UUID().uuidString.prefix(6))"
            // The lease member's joins (JoinGroup, API key 11; the replay itself joins no group) are answered
            // COORDINATOR_LOAD_IN_PROGRESS (14), which librdkafka retries, a second apart, before one is taken.
            try kafka.failRequests(apiKey: 11, count: 12, errorCode: 14)
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
            let started = ContinuousClock.now
            let run = try await ChildProcess.run(executable, arguments, environment: childEnvironment(["LOG_LEVEL": "warning"]), timeout: .seconds(120))
            #expect(ContinuousClock.now - started > .seconds(6), "the lease was slow to come")
            #expect(run.status == 0, "\(run.stderr.suffix(2_000))")
            let waiting = try #require(
                run.stdout.range(of: "Waiting for the lease of --group \(group) (its lease group \(group).replay-lease is answering slowly"),
                "\(run.stdout)"
            )
            let groupLine = try #require(run.stdout.range(of: "Group: \(group)"), "\(run.stdout)")
            #expect(waiting.lowerBound < groupLine.lowerBound, "said while waiting, before the replay starts: \(run.stdout)")
            #expect(run.stdout.contains("Replayed 20 records"), "\(run.stdout)")
        }
    }

    /// A replay joins no group, but its consumer looks up its group's coordinator, which a dry run does not need (it
    /// commits nothing): a refused look-up (no rights on the group) must not stop it as it stops a streaming instance.
    @Test("campaign-pipeline replay --dry-run without rights on its group replays the range", .timeLimit(.minutes(3)))
    func dryRunNeedsNoGroupRights() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            // Enough records for the replay to outlast the one second a streaming instance is refused for here.
            try await produce(try events(15_000, base: Date()), to: configuration.topics.sends, kafka: kafka)
            // Every FindCoordinator (API key 10) answered GROUP_AUTHORIZATION_FAILED (30).
            try kafka.failRequests(apiKey: 10, count: 10_000, errorCode: 30)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("dry-run-\(UUID().uuidString).json")
            try Data(#"{"processing": {"groupRefusalSeconds": 1}}"#.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let arguments = ["replay", "--config", file.path, "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--dry-run"]
            let started = ContinuousClock.now
            let run = try await ChildProcess.run(executable, arguments, environment: childEnvironment(["LOG_LEVEL": "warning"]), timeout: .seconds(120))
            #expect(run.status == 0, "\(run.stdout.suffix(2_000)) \(run.stderr.suffix(2_000))")
            #expect(run.stdout.contains("Replayed 15000 records"), "\(run.stdout)")
            #expect(ContinuousClock.now - started > .seconds(2), "the replay outlasted groupRefusalSeconds")
        }
    }

    /// The reviewer's reproduction: a group reused for another range took its committed offset, progress in the first
    /// range, for progress in the second. `--from 0:2 --to 0:4` then `--from 0:0 --to 0:2` with the same group said
    /// the group had replayed the whole range (offsets 0 and 1 never were) and exited 0; `[0, 20)` after `[5, 10)`
    /// said "Resuming" and skipped `[0, 5)`. Such a group is refused now, naming --group; the same range resumes.
    @Test("campaign-pipeline replay refuses a --group that replayed another range, and resumes the same range")
    func groupReusedForAnotherRange() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(600, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let environment = childEnvironment(["LOG_LEVEL": "warning"])
            func replay(_ from: String, _ to: String, group: String, _ more: [String] = []) async throws -> (status: Int32, stdout: String, stderr: String) {
                let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", from, "--to", to, "--group", group] + more
                return try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            }
            for (first, second, replayed) in [(("0:2", "0:4"), ("0:0", "0:2"), 2), (("0:5", "0:10"), ("0:0", "0:20"), 5)] {
                let group = "nightly-\(UUID().uuidString.prefix(6))"
                let earlier = try await replay(first.0, first.1, group: group)
                #expect(earlier.status == 0, "\(earlier.stderr.suffix(2_000))")
                #expect(earlier.stdout.contains("Replayed \(replayed) records"), "\(earlier.stdout)")

                let other = try await replay(second.0, second.1, group: group)
                #expect(other.status == 64, "[\(second.0), \(second.1)) after [\(first.0), \(first.1)): \(other.stdout)\n\(other.stderr.suffix(2_000))")
                #expect(other.stderr.contains("--group \(group)"), "names the flag and the group: \(other.stderr.suffix(2_000))")
                #expect(other.stderr.contains("--from \(first.0) --to \(first.1)"), "names the range the group replayed: \(other.stderr.suffix(2_000))")
                #expect(!other.stdout.contains("already replayed") && !other.stdout.contains("Resuming") && !other.stdout.contains("Replayed"), "\(other.stdout)")

                // The same range into other topics: the group has not replayed it there. `--deliver` after a replay into the
                // replay.* topics was told that the group had replayed the whole range, and sent nothing to phones.
                for destination in [["--deliver"], ["--output-prefix", "backfill."]] where replayed == 2 {
                    let elsewhere = try await replay(first.0, first.1, group: group, destination)
                    #expect(elsewhere.status == 64, "\(destination): \(elsewhere.stdout)\n\(elsewhere.stderr.suffix(2_000))")
                    #expect(
                        elsewhere.stderr.contains("--group \(group) has replayed this range into topics prefixed 'replay.'"),
                        "names where the group replayed the range: \(elsewhere.stderr.suffix(2_000))"
                    )
                    #expect(!elsewhere.stdout.contains("already replayed") && !elsewhere.stdout.contains("Replayed"), "\(elsewhere.stdout)")
                }

                // The same range again: the group has replayed it all.
                let same = try await replay(first.0, first.1, group: group)
                #expect(same.status == 0, "\(same.stderr.suffix(2_000))")
                #expect(same.stdout.contains("group \(group) has already replayed this whole range"), "\(same.stdout)")
            }
        }
    }

    /// A replay reads its partitions outside its group's membership, so a second replay with the same --group (a
    /// scheduled job overlapping the one before) replayed the range again while the first ran: every output twice,
    /// with --deliver every notification sent twice. The group's lease, held here by the test, refuses it.
    @Test("campaign-pipeline replay is refused with status 75 while another replay holds its group; a dry run is not")
    func replayRefusedWhileItsGroupIsHeld() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            let total = 60
            try await produce(try events(total, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let environment = childEnvironment(["LOG_LEVEL": "warning"])
            let group = "nightly-\(UUID().uuidString.prefix(6))"
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
            let analyticsTopic = replayConfiguration(configuration).topics.analytics

            let lease = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            let refused = try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            let dryRun = try await ChildProcess.run(executable, arguments + ["--dry-run"], environment: environment, timeout: .seconds(120))
            await lease.release()
            #expect(refused.status == 75, "\(refused.stdout)\n\(refused.stderr.suffix(2_000))")
            #expect(refused.stderr.contains("another replay is running in --group \(group)"), "\(refused.stderr.suffix(2_000))")
            #expect(!refused.stdout.contains("Replaying"), "refused before it says what it replays: \(refused.stdout)")
            #expect(try await recordCount(analyticsTopic, kafka: kafka) == 0, "the refused replay wrote nothing")
            #expect(dryRun.status == 0, "a dry run commits nothing and takes no lease: \(dryRun.stderr.suffix(2_000))")

            let replayed = try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            #expect(replayed.status == 0, "once the lease is released: \(replayed.stderr.suffix(2_000))")
            #expect(replayed.stdout.contains("Replayed \(total) records"), "\(replayed.stdout)")
            #expect(try await recordCount(analyticsTopic, kafka: kafka) == Int64(total))
        }
    }

    /// A running replay holds its group's lease: a replay started meanwhile does not get it. A replay killed while it
    /// holds it (SIGKILL, an out-of-memory kill) leaves its member in the lease group until the member's session times
    /// out (10 s); then the next replay takes the lease: the group is not held for good.
    @Test("a running campaign-pipeline replay holds its group's lease; once killed, the lease is free after its session")
    func killedReplayReleasesItsGroup() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            let (child, group) = try await startReplayHoldingItsGroup(executable, events: 12_000, kafka: kafka, configuration: configuration, name: "killed")
            // Stopped, so that it cannot finish (and leave) first; its member stays in the group for its session.
            // Without the command's lease, this join is alone and given every partition in about 3 s.
            kill(child.process.processIdentifier, SIGSTOP)
            await #expect(throws: (any Error).self, "the running replay's group is held") {
                let lease = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger, within: .seconds(8))
                await lease.release()
            }
            kill(child.process.processIdentifier, SIGKILL)
            _ = try await child.waitForExit(timeout: .seconds(30))
            // Its session (10 s) over, the lease is free. (A replay started before that waits on the member; the
            // embedded broker's coordinator can then leave it unanswered, see ReplayLease.)
            try await Task.sleep(for: .seconds(12))
            let lease = try await leaseAfterDeadMember(group: group, configuration: configuration)
            await lease.release()
        }
    }

    /// A replay whose member loses its place in the lease group (here its process is stopped past its session, as a
    /// paused VM or a long GC pause would) no longer holds the lease: a replay started meanwhile was alone in the group
    /// and took it. Once it runs again, it stops with status 75 (as a refused replay does) instead of replaying beside
    /// the other, and commits nothing more: the group's progress is the other's.
    @Test("a campaign-pipeline replay that loses its group's lease while it runs stops with status 75")
    func replayStopsWhenItLosesItsLease() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            let total = 12_000
            let (child, group) = try await startReplayHoldingItsGroup(executable, events: total, kafka: kafka, configuration: configuration, name: "stopped")
            kill(child.process.processIdentifier, SIGSTOP)
            // Its session (10 s) over, the coordinator drops its member: a replay starting now is alone in the group.
            try await Task.sleep(for: .seconds(12))
            let lease = try await leaseAfterDeadMember(group: group, configuration: configuration)
            // The replay that took the lease (the test, here) replays the whole range: the group's progress is its end.
            let ranges = try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends)
            let ends = ranges.map { KafkaTopicPartitionOffset(topic: $0.key.topic, partition: $0.key.partition, offset: $0.value.upperBound) }
            let other = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: group), logger: testLogger)
            try await other.commit(ends.map { KafkaOffsetAndMetadata($0, metadata: "") }, within: .seconds(10))
            kill(child.process.processIdentifier, SIGCONT)
            let status = try await child.waitForExit(timeout: .seconds(90))
            await lease.release()
            #expect(status == 75, "\(child.stdout)\n\(child.stderrTail())")
            #expect(child.stderr.contains("the replay lost its lease of --group \(group)"), "\(child.stderrTail())")
            #expect(child.stderr.contains("run it again with --group \(group) --from beginning --to end"), "\(child.stderrTail())")
            #expect(child.stdout.contains("Interrupted after"), "it stopped before the end of its range: \(child.stdout)")
            #expect(try await recordCount(replayConfiguration(configuration).topics.analytics, kafka: kafka) < Int64(total))
            // It committed nothing: not what it had done before it was stopped (its commit due when it ran again
            // waited a round, and it knew by then), nor what it finished since. The other replay's progress stands.
            let committed = try await other.committed(Array(ranges.keys))
            await other.close()
            #expect(Set(committed) == Set(ends), "\(committed)")
        }
    }

    /// The lease of `group` once a holder's member has timed out: the embedded broker's coordinator can leave a join
    /// made around that instant unanswered (see ``ReplayLease``), so a join not answered in 20 s is made again, as a
    /// user runs the replay again.
    private func leaseAfterDeadMember(group: String, configuration: PipelineConfiguration) async throws -> ReplayLease {
        for attempt in 1... {
            do {
                return try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger, within: .seconds(20))
            } catch let error as KafkaError where attempt < 3 && error.message.contains("did not answer") {
                continue
            }
        }
        preconditionFailure("unreachable")
    }

    /// Produces `events` events and starts `campaign-pipeline replay --from beginning` over them in a new group;
    /// returns once it holds the group's lease (it says "Group: …" then, before it reads anything), still running.
    private func startReplayHoldingItsGroup(
        _ executable: URL,
        events count: Int,
        kafka: EmbeddedKafka,
        configuration: PipelineConfiguration,
        name: String
    ) async throws -> (child: ChildProcess, group: String) {
        try await produce(try events(count, base: Date()), to: configuration.topics.sends, kafka: kafka)
        let group = "nightly-\(UUID().uuidString.prefix(6))"
        let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
        let child = try ChildProcess(executable, arguments, environment: childEnvironment(["LOG_LEVEL": "warning"]), name: name)
        try await eventually("the replay to hold its group", timeout: .seconds(60)) {
            !child.process.isRunning || child.stdout.contains("Group: \(group)") ? true : nil
        }
        #expect(child.process.isRunning, "\(child.stdout)\n\(child.stderrTail())")
        return (child, group)
    }

    /// The pipeline itself (not only the command) commits each offset with the range it is progress in, and refuses
    /// to start a replay whose group replayed another range, reading nothing.
    @Test("a replay commits its range with each offset; a pipeline given a group that replayed another range refuses it")
    func pipelineRecordsAndChecksItsRange() async throws {
        try await withReplayCluster { kafka, configuration in
            let topic = configuration.topics.sends
            try await produce(try events(300, base: Date()), to: topic, kafka: kafka)
            let replayed = replayConfiguration(configuration)
            let first = ReplayPlan(ranges: try await ranges(.offsets([0: 2]), .offsets([0: 4]), kafka: kafka, topic: topic), from: .offsets([0: 2]), to: .offsets([0: 4]))
            try await CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: first, logger: testLogger).run()
            let partition = KafkaTopicPartition(topic: topic, partition: 0)
            let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
            let committed = try await check.committedWithMetadata([partition])
            await check.close()
            #expect(committed.first?.position.offset == 4)
            #expect(committed.first.flatMap { ReplayCommitMetadata(parsing: $0.metadata) } == first.commitMetadata(of: partition), "\(committed)")

            let second = ReplayPlan(ranges: try await ranges(.offsets([0: 0]), .offsets([0: 2]), kafka: kafka, topic: topic), from: .offsets([0: 0]), to: .offsets([0: 2]))
            let pipeline = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: second, logger: testLogger)
            let conflict = await #expect(throws: ReplayGroupConflict.self) { try await pipeline.run() }
            #expect(conflict?.committedOffset == 4 && conflict?.group == replayed.groupID)
            #expect(pipeline.statistics.snapshot.totalIn == 0)
        }
    }

    /// Produces `count` events and plans a replay of the whole sends topic in a new group named from `group`.
    private func wholeTopicReplay(
        of count: Int,
        group: String,
        kafka: EmbeddedKafka,
        configuration: PipelineConfiguration
    ) async throws -> (ReplayPlan, PipelineConfiguration) {
        try await produce(try events(count, base: Date()), to: configuration.topics.sends, kafka: kafka)
        let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends))
        return (plan, replayConfiguration(configuration, group: "\(group)-\(UUID().uuidString.prefix(6))"))
    }

    /// A replay that lost its group's lease stops without committing (``CampaignPipeline/stopWithoutCommitting()``):
    /// its final commit would set back the progress of the replay that holds the lease now.
    @Test("a replay stopped without committing leaves its group's progress where its last periodic commit put it")
    func stopWithoutCommitting() async throws {
        try await withReplayCluster { kafka, configuration in
            let (plan, replayed) = try await wholeTopicReplay(of: 6_000, group: "replay-halted", kafka: kafka, configuration: configuration)
            let pipeline = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
            async let run: Void = pipeline.run()
            try await eventually("1,500 records read", timeout: .seconds(60)) { pipeline.statistics.snapshot.totalIn >= 1_500 ? true : nil }
            pipeline.stopWithoutCommitting()
            try await run
            let read = pipeline.statistics.snapshot
            #expect(!pipeline.hasFinishedReplay && read.unfinished == 0, "drained: \(read)")
            // A stop() commits all it read (its drain finished every event); this one only what a commit every
            // second had by then.
            let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
            let committed = try await check.committed(Array(plan.ranges.keys)).reduce(Int64(0)) { $0 + max(0, $1.offset) }
            await check.close()
            #expect(committed < Int64(read.totalIn), "committed \(committed) of the \(read.totalIn) read")
        }
    }

    @Test("an interrupted replay resumed with the same group processes every event, none before its commit again")
    func interruptAndResume() async throws {
        try await withReplayCluster { kafka, configuration in
            let (plan, replayed) = try await wholeTopicReplay(of: 6_000, group: "replay-resume", kafka: kafka, configuration: configuration)

            let first = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await first.run() }
                group.addTask {
                    while first.statistics.snapshot.totalIn < 1_500 { try await Task.sleep(for: .milliseconds(5)) }
                    first.stop()
                }
                try await group.waitForAll()
            }
            let firstCount = try await readAll(replayed.topics.analytics, kafka: kafka).count
            #expect(firstCount < 6_000, "interrupted before the end (\(firstCount))")
            #expect(!first.hasFinishedReplay, "a replay stopped before the end has not finished")

            // What the first run committed is where the second starts.
            let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
            let committed = try await check.committed(Array(plan.ranges.keys))
            await check.close()
            let committedTotal = committed.reduce(Int64(0)) { $0 + max(0, $1.offset) }
            #expect(committedTotal > 0)

            let reports = Mutex([ReplayProgress]())
            let second = CampaignPipeline(
                configuration: replayed,
                registry: builtinRegistry,
                replay: plan,
                progress: { progress in reports.withLock { $0.append(progress) } },
                logger: testLogger
            )
            try await second.run()
            #expect(Int64(second.statistics.snapshot.totalIn) == 6_000 - committedTotal, "the second run starts at the committed offsets")
            // The records the first run did count as done, but not towards the second's rate (and so its ETA): counted
            // in, a replay resumed near its end reported a rate many times its own and an ETA of next to nothing.
            let last = try #require(reports.withLock { $0.last })
            #expect(last.done == 6_000)
            let processedAtRate = last.rate * last.elapsedSeconds
            #expect(abs(processedAtRate - Double(6_000 - committedTotal)) < 1, "rate × elapsed is what this run processed: \(processedAtRate)")
            #expect(second.hasFinishedReplay)

            let outcomes = try analytics(try await readAll(replayed.topics.analytics, kafka: kafka))
            let messageIds = Set(outcomes.map(\.identity.messageId))
            #expect(messageIds.count == 6_000, "every event in range processed")
        }
    }

    /// A backfill run by a script or a job scheduler is judged by its exit status: one stopped by SIGINT or SIGTERM
    /// before the end of its range has not replayed the range, and must not exit 0 (it used to, printing "Replayed N
    /// records" as if it had finished), nor leave the user to guess how to continue.
    @Test("campaign-pipeline replay interrupted by SIGINT exits non-zero, says how to resume, and the resumed run finishes it")
    func interruptedCommandFails() async throws {
        let executable = try #require(pipelineExecutable, "campaign-pipeline was not found next to the test bundle; build it first")
        try await withReplayCluster { kafka, configuration in
            let total = 12_000
            try await produce(try events(total, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let group = "replay-cli-\(UUID().uuidString.prefix(6))"
            let arguments = ["replay", "--bootstrap-servers", kafka.bootstrapServers, "--from", "beginning", "--group", group]
            let environment = childEnvironment(["LOG_LEVEL": "warning"])
            let analyticsTopic = replayConfiguration(configuration).topics.analytics

            let child = try ChildProcess(executable, arguments, environment: environment, name: "interrupted")
            try await eventually("the replay to start writing outputs", timeout: .seconds(60)) {
                if !child.process.isRunning { return true }
                return try await recordCount(analyticsTopic, kafka: kafka) > 0 ? true : nil
            }
            let wasRunning = child.process.isRunning
            kill(child.process.processIdentifier, SIGINT)
            let status = try await child.waitForExit(timeout: .seconds(60))
            let written = try await recordCount(analyticsTopic, kafka: kafka)
            let wasInterrupted = wasRunning && written < Int64(total)
            if wasInterrupted {
                #expect(status != 0, "an interrupted replay must not exit 0; stdout:\n\(child.stdout)")
                #expect(child.stderr.contains("interrupted"), "says it was interrupted; stderr:\n\(child.stderrTail())")
                #expect(child.stderr.contains("--group \(group)"), "says how to resume; stderr:\n\(child.stderrTail())")
                #expect(!child.stdout.contains("Replayed "), "does not report the range as replayed; stdout:\n\(child.stdout)")
            } else {
                #expect(status == 0, "it finished before the signal, so it must have succeeded:\n\(child.stderrTail())")
            }

            let resumed = try await ChildProcess.run(executable, arguments, environment: environment, timeout: .seconds(120))
            #expect(resumed.status == 0, "the resumed replay finishes: \(resumed.stderr.suffix(2_000))")
            // A replay that finished before the signal (a release build replays the 12,000 records in about a second)
            // can leave its group nothing to do.
            #expect(
                resumed.stdout.contains("Replayed ")
                    || (!wasInterrupted && resumed.stdout.contains("group \(group) has already replayed this whole range")),
                "\(resumed.stdout)"
            )
            let outcomes = try analytics(try await readAll(analyticsTopic, kafka: kafka))
            #expect(Set(outcomes.map(\.identity.messageId)).count == total, "every event in range processed")
        }
    }

    @Test("a replay judges expiry at each event's own time; one that sends to devices judges it now")
    func decisionClocks() async throws {
        try await withReplayCluster { kafka, configuration in
            // Sent two hours ago, to expire one hour ago: live within their own time, expired now.
            let factory = try EventFactory()
            let occurredAt = Date().addingTimeInterval(-7_200)
            let events = (0..<60).map { index in
                var event = factory.event(EventFactory.kinds[index % 4], id: "late-\(index)", recipient: "user-\(index)", occurredAt: occurredAt)
                event["expiresAt"] = .string(EventFactory.rfc3339(occurredAt.addingTimeInterval(3_600)))
                return (key: "user-\(index)", value: JSONValue.object(event).encoded())
            }
            try await produce(events, to: configuration.topics.sends, kafka: kafka)
            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends))
            let replayed = replayConfiguration(configuration)

            // Each run adds its 60 outcomes to the replay's analytics topic.
            var expected: [AnalyticsEvent.Kind: Int] = [:]
            for (clock, kind) in [(CampaignPipeline.DecisionClock.eventTime, AnalyticsEvent.Kind.delivered), (.wallClock, .expired)] {
                var settings = replayed
                settings.groupID = "replay-\(kind.rawValue)"
                try await CampaignPipeline(configuration: settings, registry: builtinRegistry, replay: plan, decisionClock: clock, logger: testLogger).run()
                expected[kind] = 60
                let outcomes = try analytics(try await readAll(replayed.topics.analytics, kafka: kafka))
                #expect(Dictionary(grouping: outcomes, by: \.kind).mapValues(\.count) == expected, "\(clock)")
            }
        }
    }

    @Test("a dry run writes nothing to any topic and commits nothing; it counts and logs events rendered with warnings")
    func dryRun() async throws {
        try await withReplayCluster { kafka, configuration in
            // One event with a key its template does not read: a dry run is how a backfill is checked before it runs.
            let misspelt = try EventFactory().event("basic-fcm", id: "misspelt", recipient: "user-1").setting(["content", "subtitel"], to: "oops")
            try await produce(try events(999, base: Date()) + [("user-1", JSONValue.object(misspelt).encoded())], to: configuration.topics.sends, kafka: kafka)
            let replayed = replayConfiguration(configuration)
            let topics = configuration.topics.all + replayed.topics.all
            var before: [String: Int] = [:]
            for topic in Set(topics) { before[topic] = try await readAll(topic, kafka: kafka).count }

            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends), isDryRun: true)
            let logs = LogRecorder()
            let pipeline = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: logs.logger(level: .info))
            try await pipeline.run()
            #expect(pipeline.statistics.snapshot.totalIn == 1_000)
            #expect((pipeline.statistics.snapshot.outcomes[.delivered] ?? 0) > 0)
            #expect(pipeline.statistics.snapshot.eventsWithWarnings == ["basic/fcm": 1])
            #expect(logs.lines.filter { $0.message == "Event rendered with warnings" }.compactMap { $0.metadata["eventId"]?.description } == ["misspelt"])
            for topic in Set(topics) {
                #expect(try await readAll(topic, kafka: kafka).count == before[topic], "\(topic) unchanged")
            }
            let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
            let committed = try await check.committed(Array(plan.ranges.keys))
            await check.close()
            #expect(committed.allSatisfy { $0.offset < 0 }, "no offsets committed")
        }
    }

    /// A dry run turned auto-commit off, but `kafka.consumerProperties` passed through after it, so a configuration
    /// that sets `enable.auto.commit` (librdkafka's default, often written out) made the dry run commit what it
    /// read: a real replay run afterwards with the same `--group` then resumed past it and skipped those events.
    @Test("a dry run commits nothing even when the configuration turns auto-commit on")
    func dryRunCommitsNothingWithAutoCommit() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(1_000, base: Date()), to: configuration.topics.sends, kafka: kafka)
            var replayed = replayConfiguration(configuration)
            replayed.consumerProperties["enable.auto.commit"] = "true"
            replayed.consumerProperties["auto.commit.interval.ms"] = "100"
            let plan = ReplayPlan(ranges: try await ranges(.beginning, .end, kafka: kafka, topic: configuration.topics.sends), isDryRun: true)
            let pipeline = CampaignPipeline(configuration: replayed, registry: builtinRegistry, replay: plan, logger: testLogger)
            try await pipeline.run()
            #expect(pipeline.statistics.snapshot.totalIn == 1_000)
            let check = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: [kafka.bootstrapServers], groupID: replayed.groupID), logger: testLogger)
            let committed = try await check.committed(Array(plan.ranges.keys))
            await check.close()
            #expect(committed.allSatisfy { $0.offset < 0 }, "no offsets committed: \(committed.filter { $0.offset >= 0 })")
        }
    }

    /// A group's commit is resumed from only when it is progress in the same range: the same boundaries (whatever
    /// offsets they resolve to now: `end` moves as producers write), or, boundaries not known, the same offsets. A
    /// commit in another range, or one naming none past the range's start, used to be taken for progress in this one.
    @Test("a replay resumes from its group's commits only in the range they name")
    func resumeOnlyInTheSameRange() throws {
        let partition = KafkaTopicPartition(topic: "campaign.sends", partition: 0)
        func committed(_ offset: Int64, _ metadata: ReplayCommitMetadata?) -> [KafkaOffsetAndMetadata] {
            [KafkaOffsetAndMetadata(KafkaTopicPartitionOffset(topic: partition.topic, partition: 0, offset: offset), metadata: metadata?.encoded ?? "")]
        }
        let nightly = ReplayPlan(ranges: [partition: 2..<4], from: .offsets([0: 2]), to: .offsets([0: 4]))
        let recorded = try #require(nightly.commitMetadata(of: partition))
        #expect(recorded == ReplayCommitMetadata(from: "0:2", to: "0:4", range: 2..<4))
        #expect(recorded.encoded == "campaign-pipeline-replay/1 from=0:2 to=0:4 offsets=2..<4")
        #expect(ReplayCommitMetadata(parsing: recorded.encoded) == recorded)
        #expect(ReplayCommitMetadata(parsing: "") == nil && ReplayCommitMetadata(parsing: "some other client") == nil)

        // The reviewer's case: [0, 2) after [2, 4) with the same group.
        let earlier = ReplayPlan(ranges: [partition: 0..<2], from: .offsets([0: 0]), to: .offsets([0: 2]))
        let conflict = #expect(throws: ReplayGroupConflict.self) { try earlier.remainingCount(after: committed(4, recorded), group: "nightly") }
        #expect(conflict?.committedRange == recorded && conflict?.committedOffset == 4 && conflict?.partition == partition)
        #expect(conflict?.description.contains("--group nightly has replayed another range") == true, "\(String(describing: conflict))")
        #expect(conflict?.description.contains("--from 0:2 --to 0:4 (offsets 2..<4)") == true, "\(String(describing: conflict))")
        // [0, 20) after [5, 10): [0, 5) would have been skipped.
        let wide = ReplayPlan(ranges: [partition: 0..<20], from: .offsets([0: 0]), to: .offsets([0: 20]))
        let narrow = ReplayPlan(ranges: [partition: 5..<10], from: .offsets([0: 5]), to: .offsets([0: 10]))
        #expect(throws: ReplayGroupConflict.self) { try wide.remainingCount(after: committed(10, narrow.commitMetadata(of: partition)), group: "g") }
        // Another range wholly before this one claims nothing of it, but the group keeps one range: refused too.
        let later = ReplayPlan(ranges: [partition: 4..<9], from: .offsets([0: 4]), to: .end)
        #expect(throws: ReplayGroupConflict.self) { try later.remainingCount(after: committed(4, recorded), group: "g") }

        // The same range resumes, and a whole range done leaves nothing.
        #expect(try nightly.remainingCount(after: committed(3, recorded), group: "g") == 1)
        #expect(try nightly.remainingCount(after: committed(4, recorded), group: "g") == 0)
        // The same boundaries resolved to a later end (producers wrote meanwhile): the rest of the new range is left.
        let growing = ReplayPlan(ranges: [partition: 0..<306], from: .beginning, to: .end)
        let grown = ReplayPlan(ranges: [partition: 0..<406], from: .beginning, to: .end)
        #expect(try grown.start(of: partition, after: committed(306, growing.commitMetadata(of: partition)), group: "g") == 306)
        // ... or to a later start (retention deleted records), past the group's commit: from the new start.
        let trimmed = ReplayPlan(ranges: [partition: 320..<406], from: .beginning, to: .end)
        #expect(try trimmed.start(of: partition, after: committed(306, growing.commitMetadata(of: partition)), group: "g") == 320)
        // Boundaries not known (a plan made in code): the same offsets resume, others do not.
        let bare = ReplayPlan(ranges: [partition: 0..<306])
        #expect(try bare.start(of: partition, after: committed(100, growing.commitMetadata(of: partition)), group: "g") == 100)
        #expect(throws: ReplayGroupConflict.self) { try bare.start(of: partition, after: committed(100, grown.commitMetadata(of: partition)), group: "g") }

        // Where the outputs went is recorded, and a replay resumes only into the same destination.
        let intoReplayTopics = ReplayPlan(ranges: [partition: 2..<4], from: .offsets([0: 2]), to: .offsets([0: 4]), output: .prefixed("replay."))
        let replayed = try #require(intoReplayTopics.commitMetadata(of: partition))
        #expect(replayed.encoded == "campaign-pipeline-replay/1 from=0:2 to=0:4 offsets=2..<4 output=prefix:replay.")
        #expect(ReplayCommitMetadata(parsing: replayed.encoded) == replayed)
        #expect(ReplayCommitMetadata(parsing: "campaign-pipeline-replay/1 offsets=2..<4 output=elsewhere") == nil)
        #expect(try intoReplayTopics.remainingCount(after: committed(3, replayed), group: "g") == 1)
        var delivering = intoReplayTopics
        delivering.output = .live
        #expect(delivering.commitMetadata(of: partition)?.encoded.hasSuffix(" output=live") == true)
        let notDelivered = #expect(throws: ReplayGroupConflict.self) { try delivering.remainingCount(after: committed(4, replayed), group: "nightly") }
        #expect(
            notDelivered?.description.contains(
                "--group nightly has replayed this range into topics prefixed 'replay.': in campaign.sends/0 it committed offset 4 as progress in "
                    + "--from 0:2 --to 0:4 (offsets 2..<4), and this replay writes into the LIVE topics (--deliver)"
            ) == true,
            "\(String(describing: notDelivered))"
        )
        var intoOtherTopics = intoReplayTopics
        intoOtherTopics.output = .prefixed("backfill.")
        #expect(throws: ReplayGroupConflict.self) { try intoOtherTopics.remainingCount(after: committed(3, replayed), group: "g") }
        // A commit by an earlier campaign-pipeline, which recorded the range only: not known to be into the same topics.
        let unrecorded = #expect(throws: ReplayGroupConflict.self) { try intoReplayTopics.remainingCount(after: committed(3, recorded), group: "g") }
        #expect(unrecorded?.description.contains("has replayed this range without recording where its outputs went") == true, "\(String(describing: unrecorded))")

        // Commits naming no range: past the start they cannot be trusted; at or before it they claim nothing.
        let unnamed = #expect(throws: ReplayGroupConflict.self) { try nightly.start(of: partition, after: committed(3, nil), group: "old") }
        #expect(unnamed?.committedRange == nil)
        #expect(unnamed?.description.contains("--group old has committed offset 3 in campaign.sends/0") == true, "\(String(describing: unnamed))")
        #expect(try nightly.start(of: partition, after: committed(2, nil), group: "old") == 2)
        #expect(try nightly.start(of: partition, after: committed(KafkaOffset.invalid, nil), group: "new") == 2)

        // Offsets the replay was to read before its range's start, which retention moved past them: from the group's
        // commit in this range, or else from the offset --from gave (up to the offset --to gave, if before).
        #expect(trimmed.offsetsBeforeStart(of: partition, after: committed(306, growing.commitMetadata(of: partition))) == 306..<320)
        #expect(trimmed.offsetsBeforeStart(of: partition, after: committed(330, growing.commitMetadata(of: partition))) == nil)
        #expect(trimmed.offsetsBeforeStart(of: partition, after: []) == nil, "--from beginning asks for no offset before it")
        #expect(trimmed.offsetsBeforeStart(of: partition, after: committed(306, narrow.commitMetadata(of: partition))) == nil, "another range's commit")
        let fromOffsets = ReplayPlan(ranges: [partition: 37..<60], from: .offsets([0: 0]), to: .offsets([0: 60]))
        #expect(fromOffsets.offsetsBeforeStart(of: partition, after: []) == 0..<37)
        let endingBeforeTheStart = ReplayPlan(ranges: [partition: 37..<37], from: .offsets([0: 0]), to: .offsets([0: 20]))
        #expect(endingBeforeTheStart.offsetsBeforeStart(of: partition, after: []) == 0..<20)
        #expect(fromOffsets.offsetsBeforeStart(of: KafkaTopicPartition(topic: "campaign.sends", partition: 1), after: []) == nil, "a partition the plan does not replay")

        // Every partition is checked; the first is named, the others counted.
        let other = KafkaTopicPartition(topic: "campaign.sends", partition: 1)
        let both = ReplayPlan(ranges: [partition: 0..<10, other: 0..<10], from: .beginning, to: .end)
        let foreign = ReplayCommitMetadata(from: "beginning", to: "2026-11-20T10:00:00.000000Z", range: 0..<5).encoded
        let commits = [partition, other].map { KafkaOffsetAndMetadata(KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: 5), metadata: foreign) }
        let twice = #expect(throws: ReplayGroupConflict.self) { try both.starts(after: commits, group: "g") }
        #expect(twice?.partition == partition && twice?.otherPartitions == 1)
        #expect(twice?.description.contains("(and in 1 more partition)") == true, "\(String(describing: twice))")
    }

    @Test("boundaries parse, and bad ones are refused naming the option")
    func boundaryParsing() throws {
        #expect(try ReplayBoundary(parsing: "beginning", option: "--from") == .beginning)
        #expect(try ReplayBoundary(parsing: "end", option: "--to") == .end)
        #expect(try ReplayBoundary(parsing: "0:10,3:7", option: "--from") == .offsets([0: 10, 3: 7]))
        // Said back as given, to the millisecond (the summary line used to drop the fraction).
        #expect(try ReplayBoundary(parsing: "2026-11-26T21:45:01.554Z", option: "--from").description.hasPrefix("2026-11-26T21:45:01.554"))
        #expect(try ReplayBoundary(parsing: "2026-11-20T10:00:00Z", option: "--from") == .time(Date(timeIntervalSince1970: 1_795_168_800)))
        let error = #expect(throws: ConfigurationError.self) { try ReplayBoundary(parsing: "yesterday", option: "--to") }
        #expect(error?.key == "--to")
        // A partition named twice used to keep its last offset silently: which one was meant is not known.
        let twice = #expect(throws: ConfigurationError.self) { try ReplayBoundary(parsing: "0:100,1:200,0:150", option: "--from") }
        #expect(twice?.key == "--from")
        #expect(twice?.reason.contains("partition 0") == true, "\(String(describing: twice))")
    }

    /// Offsets that name a partition the topic lacks, or end a partition before they start it, are refused naming the
    /// option, for --to as for --from (a --to partition the topic lacks used to be ignored).
    @Test("offset ranges naming a missing partition, or ending before they start, are refused")
    func offsetRangesAreChecked() async throws {
        try await withReplayCluster { kafka, configuration in
            try await produce(try events(30, base: Date()), to: configuration.topics.sends, kafka: kafka)
            let topic = configuration.topics.sends
            let count = Int32(try await ranges(.beginning, .end, kafka: kafka, topic: topic).count)
            let cases: [(ReplayBoundary, ReplayBoundary, key: String, says: String)] = [
                (.offsets([count: 0]), .end, "--from", "no partition \(count)"),
                (.beginning, .offsets([0: 3, count + 2: 1]), "--to", "no partition \(count + 2)"),
                (.offsets([0: 5]), .offsets([0: 2]), "--to", "partition 0 ends at offset 2, before --from's 5"),
                // Replayed, partition 0 would have run to its end: --to's offset was meant for a partition --from left out.
                (.offsets([0: 1]), .offsets([1: 3]), "--to", "partition 1, which --from does not replay"),
                // The partitions --to leaves out would have been replayed to their ends (and sent, with --deliver).
                (.beginning, .offsets([0: 0]), "--to", "gives no end for partitions \((1..<count).map(String.init).joined(separator: ",")) of"),
                // A start (here a time after every record) past an end given as an offset is not an empty range.
                (.time(Date().addingTimeInterval(3_600)), .offsets(Dictionary(uniqueKeysWithValues: (0..<count).map { ($0, 0) })), "--to", "ends at offset 0, before where --from"),
                // Found by review: a start given as an offset past the partition's end, or past where a --to given
                // otherwise ends it, was an empty range ("nothing to replay", exit 0).
                (.offsets([0: 1_000]), .end, "--from", "partition 0 starts at offset 1000, past its end"),
                (.offsets([0: 2]), .time(Date().addingTimeInterval(-3_600)), "--to", "ends partition 0 at offset 0, before --from's 2"),
                (.offsets([0: 2]), .beginning, "--to", "ends partition 0 at offset 0, before --from's 2"),
            ]
            for (from, to, key, says) in cases {
                let error = await #expect(throws: ConfigurationError.self, "\(from) .. \(to)") {
                    try await ranges(from, to, kafka: kafka, topic: topic)
                }
                #expect(error?.key == key, "\(from) .. \(to): \(String(describing: error))")
                #expect(error?.reason.contains(says) == true, "\(from) .. \(to): \(String(describing: error))")
            }
            // An empty range of a partition is allowed (the same offset at both ends).
            let empty = try await ranges(.offsets([0: 2]), .offsets([0: 2]), kafka: kafka, topic: topic)
            #expect(empty.values.allSatisfy { $0.isEmpty })
        }
    }
}
