import Foundation
import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import PushSinks
import SinkTestSupport
import Synchronization
import Testing

/// A sink that takes each notification, runs `beforeAnswering`, then gives it up as a sink whose credentials are
/// refused does: the pipeline stops with the send uncommitted, as a crash after sending would leave it.
private final class RefusingSink: PushSink {
    let kind = "refusing"
    let name = "refusing"
    private let beforeAnswering: @Sendable () async -> Void
    private let taken = Mutex<[String]>([])

    init(beforeAnswering: @escaping @Sendable () async -> Void) {
        self.beforeAnswering = beforeAnswering
    }

    /// The event ids of the notifications taken, in order.
    var submitted: [String] { taken.withLock { $0 } }

    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        taken.withLock { $0.append(notification.request.eventId) }
        await beforeAnswering()
        completion(.abandoned(SinkFailure(.auth, "refused for the test")))
    }
}

@Suite("Sends read again are judged at the instant of their first reading", .timeLimit(.minutes(3)))
struct PipelineDecisionTimesTests {
    /// Judged again when read again, a send delivered shortly before its `expiresAt` also ended `push.expired`: two
    /// terminal outcomes, the payload already on its way.
    @Test("a send taken by a sink, then read again after its expiresAt, is delivered again instead of expiring")
    func readAgainAfterItsExpiry() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, base in
            let timers = base.topics.timers
            let recordedWhenTaken = Mutex<Bool?>(nil)
            // When the sink takes the notification, the instant it was judged at is on the timers topic already.
            let expiresAt = try await Self.takeThenStop("ttl-soon", kafka: kafka, base: base) {
                let records = (try? await readAll(timers, kafka: kafka)) ?? []
                let recorded = records.contains { $0.key == DecisionTimes.recordKey && (DecisionTimes.decode($0.value ?? [])?.contains { $0.first <= 0 && 0 <= $0.last } ?? false) }
                recordedWhenTaken.withLock { $0 = recorded }
            }
            #expect(recordedWhenTaken.withLock { $0 } == true, "the decision times record was written before the sink took the notification")

            try await Task.sleep(for: .seconds(max(0, expiresAt.timeIntervalSinceNow) + 0.5))
            let again = CampaignPipeline(configuration: base, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            let outcomes = try await analyticsRecords(base, kafka: kafka).map(\.event)
            #expect(outcomes.map(\.kind) == [.delivered], "\(outcomes.map { "\($0.kind.rawValue) \($0.cause?.rawValue ?? "")" })")
            #expect(try await readAll(base.topics.fcm, kafka: kafka).count == 1)
        }
    }

    /// Runs a pipeline whose sink takes the send `eventId` (a basic FCM one expiring 8 s from now), runs
    /// `beforeAnswering`, then refuses its credentials: the pipeline stops with the send uncommitted, as a crash after
    /// sending would leave it. Returns the send's `expiresAt`.
    private static func takeThenStop(
        _ eventId: String,
        kafka: EmbeddedKafka,
        base: PipelineConfiguration,
        beforeAnswering: @escaping @Sendable () async -> Void = {}
    ) async throws -> Date {
        var first = base
        first.untilIdle = nil
        first.sinks.routes = [.fcm: ["refusing"], .apns: ["refusing"]]
        let sink = RefusingSink(beforeAnswering: beforeAnswering)
        let pipeline = CampaignPipeline(configuration: first, registry: builtinRegistry, sinks: [sink], logger: testLogger)
        let running = Task { try await pipeline.run() }
        try await eventually("joined", timeout: clusterTimeout) { pipeline.status.hasJoinedGroup && pipeline.status.assignedPartitions == 1 ? true : nil }
        // Far enough ahead that the first reading, however slow the parallel test run makes it, comes before.
        let expiresAt = Date().addingTimeInterval(8)
        let factory = try EventFactory()
        let event = factory.event("basic-fcm", id: eventId, recipient: "user-\(eventId)").setting(["expiresAt"], to: .string(Timestamp(expiresAt).rfc3339))
        try await produce([("user-\(eventId)", JSONValue.object(event).encoded())], to: base.topics.sends, kafka: kafka)
        await #expect(throws: PipelineRuntimeError.self) { try await running.value }
        #expect(sink.submitted == [eventId])
        return expiresAt
    }

    /// Found by review: the platform sinks judge a send's `expiresAt` again before each attempt, by the wall clock. A
    /// send delivered once, read again after its `expiresAt`, was judged at its first instant by the pipeline but
    /// expired by the FCM sink before its first attempt: `push.delivered`, then `push.expired`. The sink now judges it
    /// as at its first reading too.
    @Test("a send read again after its expiresAt is not expired by a platform sink before its first attempt")
    func readAgainAfterItsExpiryWithAPlatformSink() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        try await withPipelineCluster(partitions: 1) { kafka, base in
            let expiresAt = try await Self.takeThenStop("ttl-platform", kafka: kafka, base: base)

            try await Task.sleep(for: .seconds(max(0, expiresAt.timeIntervalSinceNow) + 0.5))
            var second = base
            second.sinks.routes = [.fcm: ["fcm"], .apns: ["kafka"]]
            second.sinks.fcm = fcm.configuration
            let again = CampaignPipeline(configuration: second, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            let outcomes = try await analyticsRecords(base, kafka: kafka).map(\.event)
            #expect(outcomes.map(\.kind) == [.delivered], "\(outcomes.map { "\($0.kind.rawValue) \($0.reasonDetail ?? "")" })")
            #expect(fcm.answers.acceptedTokens.count == 1)
        }
    }

    /// Found by review: the campaign table follows the definitions topic a fetch or more behind, and a cancellation
    /// dated before a send's decision instant can be read after the send was judged. Read again after a crash, the send
    /// was judged at its first instant but against the table that now held the cancellation: `push.delivered` to a
    /// sink once, `push.suppressed` the next time. It is now judged against the table as its first judging had it.
    @Test("a cancellation read after a send was judged, though dated before, does not change the send read again")
    func cancellationReadBetweenTwoReadings() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, base in
            var first = base
            first.untilIdle = nil
            first.sinks.routes = [.fcm: ["refusing"], .apns: ["refusing"]]
            let factory = try EventFactory()
            let campaign = "cancelled-late"
            let cancellation = JSONValue.object([
                "type": "campaign.cancelled", "campaignId": .string(campaign),
                "occurredAt": .string(Timestamp(Date().addingTimeInterval(-60)).rfc3339),
            ])
            let sinkTookIt = Mutex<Bool>(false)
            // The sink has the notification when the cancellation is written, dated a minute before the send was judged.
            let sink = RefusingSink {
                try? await produce([(campaign, cancellation.encoded())], to: base.topics.definitions, kafka: kafka)
                sinkTookIt.withLock { $0 = true }
            }
            let pipeline = CampaignPipeline(configuration: first, registry: builtinRegistry, sinks: [sink], logger: testLogger)
            let running = Task { try await pipeline.run() }
            try await eventually("joined", timeout: clusterTimeout) { pipeline.status.hasJoinedGroup && pipeline.status.assignedPartitions == 1 ? true : nil }
            let send = factory.event("basic-fcm", id: "judged-before", recipient: "user-C").setting(["campaignId"], to: .string(campaign))
            try await produce([("user-C", JSONValue.object(send).encoded())], to: base.topics.sends, kafka: kafka)
            await #expect(throws: PipelineRuntimeError.self) { try await running.value }
            #expect(sink.submitted == ["judged-before"] && sinkTookIt.withLock { $0 })

            // A send of the campaign read for the first time after the cancellation is suppressed.
            let after = factory.event("basic-fcm", id: "judged-after", recipient: "user-D").setting(["campaignId"], to: .string(campaign))
            try await produce([("user-D", JSONValue.object(after).encoded())], to: base.topics.sends, kafka: kafka)
            let again = CampaignPipeline(configuration: base, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            let outcomes = try await analyticsRecords(base, kafka: kafka).map(\.event)
            let summary = outcomes.map { "\($0.identity.eventId ?? "?") \($0.kind.rawValue)" }
            #expect(outcomes.count == 2, "\(summary)")
            #expect(outcomes.first { $0.identity.eventId == "judged-before" }?.kind == .delivered, "\(summary)")
            #expect(outcomes.first { $0.identity.eventId == "judged-after" }?.kind == .suppressed, "\(summary)")
            #expect(try await readAll(base.topics.fcm, kafka: kafka).count == 1)
        }
    }

    /// The instants of a record written by another instance (the partition's previous owner) hold for the offsets
    /// it names, and for no other.
    @Test("the instants another instance recorded are used for the offsets they hold, and only for those")
    func instantsRecordedElsewhere() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let expiredAt = Timestamp(Date().addingTimeInterval(-60))
            let inputs = ["judged-before", "never-judged"].map { id in
                let event = factory.event("basic-fcm", id: id, recipient: "user-\(id)").setting(["expiresAt"], to: .string(expiredAt.rfc3339))
                return ("user-\(id)", JSONValue.object(event).encoded())
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)
            // Offset 0 was judged two minutes ago, before it expired; offset 1 never was.
            let judgedAt = Timestamp(Date().addingTimeInterval(-120))
            let record = KafkaProducerRecord(
                topic: configuration.topics.timers,
                partition: 0,
                key: DecisionTimes.recordKey,
                value: DecisionTimes.encode([.init(first: 0, last: 0, decidedAt: judgedAt)]),
                headers: [KafkaHeader(key: "writer", string: "another-instance")]
            )
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            _ = try await producer.send(record)
            await producer.close()

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(pipeline)
            let outcomes = Dictionary(
                try await analyticsRecords(configuration, kafka: kafka).map { ($0.event.identity.eventId ?? "", $0.event) },
                uniquingKeysWith: { first, _ in first }
            )
            #expect(outcomes["judged-before"]?.kind == .delivered)
            #expect(outcomes["never-judged"]?.kind == .expired && outcomes["never-judged"]?.cause == .ttl)
        }
    }

    /// Every instance folds every partition's records; a partition it does not read is trimmed too, or its ranges
    /// would pile up (one per 100 ms of reading) for as long as another instance owns it.
    @Test("ranges of a partition another instance reads are dropped once the group commits past them")
    func rangesOfOthersPartitionsAreTrimmed() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let sends = configuration.topics.sends
            let instant = Timestamp(Date())
            let times = DecisionTimes()
            times.merge([.init(first: 0, last: 9, decidedAt: instant), .init(first: 10, last: 19, decidedAt: instant)], of: 1)
            // Partition 1's owner commits it at 10.
            let owner = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: configuration.groupID), logger: testLogger)
            try owner.assign([KafkaTopicPartitionOffset(topic: sends, partition: 1, offset: 0)])
            try await owner.commit([KafkaTopicPartitionOffset(topic: sends, partition: 1, offset: 10)])
            await owner.close()
            // This instance reads no partition of the topic.
            let reader = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: configuration.groupID), logger: testLogger)
            #expect(reader.assignment.isEmpty)
            await times.trim(committedOf: sends, askingThrough: reader)
            #expect(times.ranges(of: 1) == [.init(first: 10, last: 19, decidedAt: instant)])
            await reader.close()
        }
    }

    /// Each batch used to send a record of its own: while the timers partition had no leader they piled up in the
    /// producer's queue (never timed out), one per batch once the batches stopped waiting for them (after 5 s), until
    /// the queue was full and the processing stopped.
    @Test("while the timers partition has no leader, the batches' decision times wait for one newer record, not one each", .timeLimit(.minutes(2)))
    func leaderlessTimersPartition() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            var running = configuration
            running.untilIdle = nil
            // Nothing committed while the test runs: committed sends have their ranges trimmed, and the record that
            // lands after the outage would hold none of them (it did on a slow CI run).
            running.consumerProperties["auto.commit.interval.ms"] = "600000"
            let factory = try EventFactory()
            let pipeline = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let events = 60
            let leaderBack = try await whileRunning(pipeline) {
                try await eventually("joined", timeout: clusterTimeout) {
                    pipeline.status.hasJoinedGroup && pipeline.status.assignedPartitions == 1 ? true : nil
                }
                try kafka.setLeader(of: configuration.topics.timers, partition: 0, to: nil)
                // Batches of their own, each changing the decision times, for three times as long as a batch waits for
                // its record (5 s): the later ones go ahead without waiting.
                for index in 0..<events {
                    let event = JSONValue.object(factory.event("basic-fcm", id: "batch-\(index)", recipient: "user-\(index)")).encoded()
                    try await produce([("user-\(index)", event)], to: configuration.topics.sends, kafka: kafka)
                    try await Task.sleep(for: .milliseconds(250))
                }
                let leaderBack = Date()
                try kafka.setLeader(of: configuration.topics.timers, partition: 0, to: 1)
                try await eventually("every send delivered", timeout: .seconds(60)) {
                    pipeline.statistics.snapshot.outcomes[.delivered] == events ? true : nil
                }
                // A record after the outage holds the last offset (not necessarily the last record: once the sends are
                // committed, at the stop, a trim can write one holding less). It lands after the outage's first one:
                // the sends may be delivered before it (a batch whose record is late does not wait for it), and a stop
                // before it would leave it unwritten (their commit at the stop makes it needless; seen on a slow CI
                // run), so it is waited for here.
                try await eventually("a record holding the last send", timeout: .seconds(60)) {
                    let records = try await readAll(configuration.topics.timers, kafka: kafka).filter { $0.key == DecisionTimes.recordKey }
                    return records.contains { (DecisionTimes.decode($0.value ?? []) ?? []).contains { $0.last == Int64(events - 1) } } ? true : nil
                }
                return leaderBack
            }
            let records = try await readAll(configuration.topics.timers, kafka: kafka).filter { $0.key == DecisionTimes.recordKey }
            // Made (the producer stamps them) while the partition had no leader: the first, which waited for it,
            // and none after it. (Once it landed, one newer record holds what changed meanwhile.)
            let madeDuringTheOutage = records.filter { ($0.timestamp ?? .distantFuture) < leaderBack }
            #expect(madeDuringTheOutage.count == 1, "\(madeDuringTheOutage.count) of \(records.count) records made while the partition had no leader")
        }
    }

    /// A record sent by an instance whose partition is then revoked must land before the partition's next owner
    /// reads the timers topic to its end: landing after it, it would give later readers instants the next owner did
    /// not judge at. The revocation waits for it (at most 5 s), and for the newer record holding the changes made
    /// before; the group's rebalance, and so the next owner's start, waits for the revocation.
    @Test("a revoked partition's decision times records land before its next owner gets it, which judges at their instants")
    func revocationWaitsForDecisionTimesRecords() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            var running = configuration
            running.untilIdle = nil
            let factory = try EventFactory()
            let first = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let second = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            func send(_ id: String, to partition: Int32) async throws {
                let event = JSONValue.object(factory.event("basic-fcm", id: id, recipient: "user-\(id)")).encoded()
                _ = try await producer.send(KafkaProducerRecord(topic: configuration.topics.sends, partition: partition, key: Array(id.utf8), value: event))
            }
            let firstRun = Task { try await first.run() }
            let (fenced, secondTookItAt, judgedBySecond) = try await whileRunning(second) {
                try await eventually("split", timeout: clusterTimeout) {
                    first.status.assignedPartitions == 1 && second.status.assignedPartitions == 1 ? true : nil
                }
                try await send("probe-0", to: 0)
                try await send("probe-1", to: 1)
                try await eventually("probes delivered", timeout: .seconds(30)) {
                    (first.statistics.snapshot.outcomes[.delivered] ?? 0) + (second.statistics.snapshot.outcomes[.delivered] ?? 0) == 2 ? true : nil
                }
                // The partition the first instance reads (it keeps the ranges of the other's too, from its records).
                let fenced = try #require(first.progress.withLock { $0.keys.first?.partition })
                // Two sends judged while the partition of the timers topic has no leader: the record of the first
                // waits for it, the change of the second for a newer record.
                try kafka.setLeader(of: configuration.topics.timers, partition: fenced, to: nil)
                for index in 0..<2 {
                    try await send("fenced-\(index)", to: fenced)
                    try await eventually("judged", timeout: .seconds(30), every: .milliseconds(20)) {
                        first.decisionTimes.ranges(of: fenced).last?.last == Int64(1 + index) ? true : nil
                    }
                }
                // The first instance leaves: its revocation waits for the partition's records.
                first.stop()
                try await eventually("revoking", timeout: .seconds(30), every: .milliseconds(20)) {
                    first.decisionTimes.isClosed(fenced) ? true : nil
                }
                #expect(second.status.assignedPartitions == 1, "the partition moves once the revocation is over")
                try kafka.setLeader(of: configuration.topics.timers, partition: fenced, to: 1)
                let tookItAt = try await eventually("the partition moved", timeout: clusterTimeout, every: .milliseconds(20)) {
                    second.status.assignedPartitions == 2 ? Date() : nil
                }
                // (Taken at once: the ranges the group commits past are dropped within seconds.)
                let judgedBySecond = try await eventually("the fenced sends delivered", timeout: .seconds(60), every: .milliseconds(20)) {
                    let delivered = (first.statistics.snapshot.outcomes[.delivered] ?? 0) + (second.statistics.snapshot.outcomes[.delivered] ?? 0)
                    return delivered >= 4 ? second.decisionTimes.ranges(of: fenced).filter { $0.first <= 2 && $0.last >= 1 } : nil
                }
                return (fenced, tookItAt, judgedBySecond)
            }
            try await firstRun.value
            await producer.close()
            let records = try await readAll(configuration.topics.timers, kafka: kafka)
                .filter { $0.key == DecisionTimes.recordKey && $0.partition == fenced && $0.headers == first.timerRecordHeaders }
            // The record sent during the outage and the newer one sent once it landed: both made (and so landed, one
            // after the other) before the partition moved.
            #expect(records.allSatisfy { ($0.timestamp ?? .distantFuture) < secondTookItAt }, "all of the first instance's records made before the partition moved")
            let held = DecisionTimes.decode(records.last?.value ?? []) ?? []
            #expect(held.last?.last == 2, "the last holds both fenced sends: \(held)")
            // The next owner read them before it judged the sends again: at the first instance's instants.
            #expect(!judgedBySecond.isEmpty && judgedBySecond.allSatisfy { range in held.contains { $0.decidedAt == range.decidedAt } }, "second: \(judgedBySecond), first: \(held)")
        }
    }

    /// A batch waits (up to 5 s) for the decision times records of its partitions; a stop while it waits leaves it
    /// unemitted, to be read again. A later batch of the same partition whose record had landed was still emitted,
    /// and its completed events moved the commit position past the unemitted one: those sends were never processed.
    @Test("a batch left unemitted at a stop is not committed past by the batches after it")
    func unemittedBatchIsNotCommittedPast() async throws {
        for _ in 1...5 {
            // Needs both partitions' sends in one batch, which one fetch normally gives; tried again otherwise.
            if try await stopWhileABatchWaits() { return }
        }
        Issue.record("no attempt read the sends of both partitions in one batch")
    }

    /// Runs the case once; `false` when the sends of the two partitions were not read in one batch.
    private func stopWhileABatchWaits() async throws -> Bool {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            var running = configuration
            running.untilIdle = nil
            let factory = try EventFactory()
            var producerConfiguration = KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers])
            producerConfiguration.linger = .milliseconds(200)
            let producer = try KafkaProducer(configuration: producerConfiguration, logger: testLogger)
            defer { Task { await producer.close() } }
            func send(_ ids: [String], to partition: Int32) async throws {
                let records = ids.map { id in
                    KafkaProducerRecord(
                        topic: configuration.topics.sends,
                        partition: partition,
                        key: Array("user-\(id)".utf8),
                        value: JSONValue.object(factory.event("basic-fcm", id: id, recipient: "user-\(id)")).encoded()
                    )
                }
                for result in await producer.send(contentsOf: records) { _ = try result.get() }
            }
            func instant(ofOffset offset: Int64, in partition: Int32) -> Timestamp? {
                pipeline.decisionTimes.ranges(of: partition).first { $0.first <= offset && offset <= $0.last }?.decidedAt
            }
            let waiting = (0..<5).map { "waiting-\($0)" }
            let later = (0..<5).map { "later-\($0)" }
            let pipeline = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let inOneBatch = try await whileRunning(pipeline) { () async throws -> Bool in
                try await eventually("joined", timeout: clusterTimeout) {
                    pipeline.status.hasJoinedGroup && pipeline.status.assignedPartitions == 2 ? true : nil
                }
                try await send(["first-0"], to: 0)
                try await send(["first-1"], to: 1)
                try await eventually("the first sends delivered", timeout: .seconds(60)) {
                    pipeline.statistics.snapshot.outcomes[.delivered] == 2 ? true : nil
                }
                // Partition 1's decision times record cannot land now: a batch with a send of it waits.
                try kafka.setLeader(of: configuration.topics.timers, partition: 1, to: nil)
                async let other: Void = send(["waiting-other"], to: 1)
                try await send(waiting, to: 0)
                try await other
                // Once in a full run on a loaded machine (the sends read in other batches than this case needs), this
                // wait timed out: the case is then tried again, as when the sends were not read in one batch; five
                // attempts without a judged batch still fail the test.
                do {
                    try await eventually("the waiting batch judged", timeout: .seconds(30), every: .milliseconds(10)) {
                        instant(ofOffset: 5, in: 0) != nil && instant(ofOffset: 1, in: 1) != nil ? true : nil
                    }
                } catch {
                    return false
                }
                // One batch judges its sends at one instant.
                guard instant(ofOffset: 1, in: 0) == instant(ofOffset: 1, in: 1) else { return false }
                // The next batch has sends of partition 0 only: its record lands at once.
                try await send(later, to: 0)
                try await eventually("the later batch judged", timeout: .seconds(30), every: .milliseconds(10)) {
                    instant(ofOffset: 10, in: 0) != nil ? true : nil
                }
                try await Task.sleep(for: .milliseconds(300))
                #expect(pipeline.statistics.snapshot.outcomes[.delivered] == 2, "the waiting batch held the later one back")
                return true
            }
            guard inOneBatch else { return false }
            try kafka.setLeader(of: configuration.topics.timers, partition: 1, to: 1)
            let again = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(again)
            let outcomes = Set(try await analyticsRecords(configuration, kafka: kafka).compactMap(\.event.identity.eventId))
            let never = (["first-0", "first-1", "waiting-other"] + waiting + later).filter { !outcomes.contains($0) }
            // Before the fix: waiting-0 to waiting-4, committed past by the later batch.
            #expect(never.isEmpty, "never processed: \(never)")
            return true
        }
    }
}
