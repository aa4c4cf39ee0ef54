import Foundation
import KafkaClient
import PipelineCore
@testable import PipelineRuntime
import Testing

@Suite("A timer fires once while its partition moves between instances", .timeLimit(.minutes(3)))
struct PipelineTimerHandoverTests {
    /// Found by review: a timer whose `push.expired` was being written when its partition was revoked (so its
    /// tombstone was not written yet) fired again on the partition's next owner: the same `push.expired` twice. The
    /// revocation now waits (at most 5 s) for the tombstones of its expiries in flight, and the next owner reads the
    /// timers partition to its end before it fires the partition's timers. (On the embedded broker the partition
    /// reaches its next owner about 5 s after the old owner leaves, past the revocation's wait, so the count of
    /// `push.expired` alone would not show a missing wait: the rebalance held back while the expiry is in flight does.)
    @Test("an expiry in flight when its partition is revoked is tombstoned before the next owner fires, which then does not")
    func expiryInFlightAtRevocation() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            var running = configuration
            running.untilIdle = nil
            let factory = try EventFactory()
            let first = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let second = CampaignPipeline(configuration: running, registry: builtinRegistry, logger: testLogger)
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            let analytics = configuration.topics.analytics
            let firstRun = Task { try await first.run() }
            let moved = try await whileRunning(second) {
                try await eventually("split", timeout: clusterTimeout) {
                    first.status.assignedPartitions == 1 && second.status.assignedPartitions == 1 ? true : nil
                }
                // A timer in each partition, so each instance has one.
                for partition: Int32 in 0...1 {
                    let id = "timer-\(partition)"
                    let event = JSONValue.object(factory.event("timer-fcm", id: id, recipient: "user-\(id)", timerSeconds: 5)).encoded()
                    _ = try await producer.send(KafkaProducerRecord(topic: configuration.topics.sends, partition: partition, key: Array(id.utf8), value: event))
                }
                try await eventually("both delivered", timeout: .seconds(30)) {
                    (first.statistics.snapshot.outcomes[.delivered] ?? 0) + (second.statistics.snapshot.outcomes[.delivered] ?? 0) == 2 ? true : nil
                }
                // Expiries cannot be written now: the first instance's stays in flight, its tombstone unwritten.
                for partition: Int32 in 0...1 { try kafka.setLeader(of: analytics, partition: partition, to: nil) }
                let moved = try await eventually("the first instance's timer fired", timeout: .seconds(30), every: .milliseconds(20)) {
                    (Int32(0)...1).first { first.timerFiring.inFlight(of: $0) > 0 }
                }
                // The first instance leaves while its expiry is in flight; its revocation waits for the tombstone.
                first.stop()
                try await eventually("revoking", timeout: .seconds(30), every: .milliseconds(20)) {
                    first.decisionTimes.isClosed(moved) ? true : nil
                }
                // The group's rebalance waits for the revocation, which waits for the expiry in flight: the other
                // instance keeps its own partition meanwhile (without the wait, it gives it up within a heartbeat or
                // two to join the rebalance). Watched for 2 s, well within the 5 s the revocation waits at most.
                let fenced = ContinuousClock.now
                var rebalancedAfter: Duration?
                while ContinuousClock.now - fenced < .seconds(2), rebalancedAfter == nil {
                    if second.status.assignedPartitions != 1 { rebalancedAfter = ContinuousClock.now - fenced }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(rebalancedAfter == nil, "the group rebalanced \(rebalancedAfter ?? .zero) after the revocation began, its expiry still in flight")
                for partition: Int32 in 0...1 { try kafka.setLeader(of: analytics, partition: partition, to: 1) }
                try await eventually("the partition moved", timeout: clusterTimeout, every: .milliseconds(20)) {
                    second.status.assignedPartitions == 2 ? true : nil
                }
                try await eventually("both timers expired", timeout: .seconds(30)) {
                    try await analyticsRecords(configuration, kafka: kafka).filter { $0.event.kind == .expired }.count >= 2 ? true : nil
                }
                // Time for the next owner to fire the moved partition's timer, had it kept it.
                try await Task.sleep(for: .seconds(2))
                return moved
            }
            try await firstRun.value
            await producer.close()
            let expiries = try await analyticsRecords(configuration, kafka: kafka).filter { $0.event.kind == .expired }.map(\.event)
            #expect(expiries.allSatisfy { $0.cause == .timer })
            let ids = expiries.compactMap(\.identity.eventId).sorted()
            #expect(ids == ["timer-0", "timer-1"], "one push.expired per timer (the moved one was timer-\(moved)): \(ids)")
        }
    }

    /// The other half of the hand-over: a partition's next owner fires its timers only once it has read the
    /// partition's timers records to their end, where the previous owner's tombstones are. Here the follower of the
    /// timers topic is held short of partition 0's end (nothing folds it) until the test folds its last record; partition
    /// 1, read to its end, fires meanwhile: a catch-up holds back its own partition only.
    @Test("a partition newly assigned fires its timers only once its timers partition has been read to its end")
    func newOwnerReadsTheTimersFirst() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let topics = configuration.topics
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            // A due timer in each partition, recorded by another instance; only partition 1's record is folded.
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            for partition: Int32 in 0...1 {
                let identity = MessageIdentity(messageId: "timer-\(partition)", eventId: "event-\(partition)", campaignId: nil, recipientId: nil, platform: .fcm, template: "timer")
                let timer = TimerBook.PendingTimer(identity: identity, expiresAt: Timestamp(Date().addingTimeInterval(-1)), partition: partition)
                _ = try await producer.send(TimerBook.record(of: timer, topic: topics.timers, writer: [KafkaHeader(key: "writer", string: "another-instance")]))
                pipeline.timers.schedule(timer)
            }
            let stateConsumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            let follower = StateTopicFollower(consumer: stateConsumer, topic: topics.timers, partitionCount: 2, timeout: .seconds(600))
            follower.folded(partition: 1, offset: 0)
            let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupID: nil), logger: testLogger)
            try consumer.assign((0...1).map { KafkaTopicPartitionOffset(topic: topics.sends, partition: $0, offset: KafkaOffset.end) })
            let sender = OutputSender(producer: producer, statistics: pipeline.statistics, backoff: .milliseconds(100), maxBackoff: .seconds(1), logger: testLogger)
            let firing = Task { await pipeline.fireTimers(consumer: consumer, sender: sender, follower: follower) }
            func expired() async throws -> [String] {
                try await analyticsRecords(configuration, kafka: kafka).filter { $0.event.kind == .expired }.map(\.event.identity.messageId).sorted()
            }
            try await eventually("partition 1's timer fired", timeout: .seconds(30)) { try await expired() == ["timer-1"] ? true : nil }
            try await Task.sleep(for: .seconds(1))
            #expect(try await expired() == ["timer-1"], "partition 0 fired before its timers partition was read to its end")
            follower.folded(partition: 0, offset: 0)
            try await eventually("partition 0's timer fired once read", timeout: .seconds(30)) { try await expired().count == 2 ? true : nil }
            #expect(pipeline.timers.count == 0)
            firing.cancel()
            await firing.value
            await consumer.close()
            await stateConsumer.close()
            await producer.close()
            #expect(try await expired() == ["timer-0", "timer-1"])
        }
    }
}
