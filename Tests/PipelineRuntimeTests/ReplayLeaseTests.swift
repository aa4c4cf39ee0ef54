import Foundation
@testable import KafkaClient
@testable import PipelineRuntime
import Testing

@Suite("One replay at a time in a replay group")
struct ReplayLeaseTests {
    @Test(
        "a second replay of a group is refused while the first holds its lease (which it does not lose), and takes it once released",
        .timeLimit(.minutes(2)),
        arguments: [Int32(1), 3]
    )
    func secondReplayOfAGroupIsRefused(partitions: Int32) async throws {
        try await withPipelineCluster(partitions: partitions) { _, configuration in
            let group = "replay-\(UUID().uuidString.prefix(6))"
            let first = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            // The refusals below move the holder's partitions for a moment (eager rebalances): that is no loss.
            let watch = Task { await first.lost() }
            // Twice: the first refusal moved none of the first's partitions for good.
            for _ in 0..<2 {
                let refusal = await #expect(throws: ReplayGroupBusy.self) {
                    try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
                }
                #expect(refusal?.group == group)
                #expect(refusal?.partitions == 2 * Int(partitions), "the sends and the definitions topics")
                #expect(refusal?.description.contains("another replay is running in --group \(group)") == true)
            }
            // Another group's replay is not held back.
            let other = try await ReplayLease.acquire(group: group + "-other", configuration: configuration, logger: testLogger)
            await other.release()
            await first.release()
            let loss = await watch.value
            if let loss, loss.cause.contains("the coordinator dropped it during a rebalance") {
                // The embedded broker's coordinator credits no heartbeat it answers with an error ("rebalance in
                // progress"), and drops a member it has not credited for a session (librdkafka then rejoins under a
                // new id, the only way the id changes): in full test runs on this two-core machine it dropped the
                // holder during the refusals in two of five runs (CI included). That is a real drop, which the lease
                // rightly reports (its detection is tested in
                // `memberDroppedDuringRebalance`), so it is recorded as a known intermittent issue here; any other
                // loss (a lost session, a failed consumer) fails.
                withKnownIssue("the embedded broker dropped the holder during a rebalance", isIntermittent: true) {
                    Issue.record("the holder was dropped: \(loss)")
                }
            } else {
                #expect(loss == nil, "the holder lost nothing: \(loss.map(String.init(describing:)) ?? "")")
            }
            let next = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            await next.release()
        }
    }

    /// A refusal from the lease group that asking again does not change. On a cluster with ACLs a replay's principal
    /// needs the lease group too; without it, the replay used to wait for the group's answer until its limit and then
    /// blame a killed replay. It, and the lease group's other refusals for good, fail at once, saying what is wrong.
    @Test(
        "a replay the lease group refuses for good fails at once, naming the group and the reason",
        .timeLimit(.minutes(3)),
        arguments: [
            // FindCoordinator (API key 10) without Describe on the group, JoinGroup (11) without Read.
            (Int16(10), Int32(30), "GROUP_AUTHORIZATION_FAILED", "needs the group %@ too"),
            (Int16(11), Int32(30), "GROUP_AUTHORIZATION_FAILED", "needs the group %@ too"),
            (Int16(11), Int32(26), "INVALID_SESSION_TIMEOUT", "session.timeout.ms in the Kafka properties must lie within"),
            (Int16(11), Int32(23), "INCONSISTENT_GROUP_PROTOCOL", "has a member that is not a replay's lease"),
            (Int16(11), Int32(81), "GROUP_MAX_SIZE_REACHED", "is full ("),
        ]
    )
    func leaseGroupRefusesForGood(refusedRequest: Int16, errorCode: Int32, name: String, advice: String) async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let group = "replay-\(UUID().uuidString.prefix(6))"
            let leaseGroup = ReplayLease.leaseGroup(of: group)
            try kafka.failRequests(apiKey: refusedRequest, count: 1_000, errorCode: errorCode)
            let started = ContinuousClock.now
            let refusal = await #expect(throws: KafkaError.self) {
                let lease = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger, within: .seconds(60))
                await lease.release()
            }
            #expect(refusal?.librdkafkaName == name, "\(refusal.map(String.init(describing:)) ?? "")")
            let message = refusal?.message ?? ""
            #expect(message.contains(advice.replacingOccurrences(of: "%@", with: leaseGroup)), "\(message)")
            #expect(message.contains(leaseGroup), "names the lease group: \(message)")
            #expect(ContinuousClock.now - started < .seconds(30), "refused at once, not after the 60 s limit")
        }
    }

    /// librdkafka reports no lost assignment for a member dropped during a rebalance: an eager member has revoked its
    /// partitions already, and rejoins under a new id. The holder must still know that another replay may have taken
    /// the lease meanwhile.
    @Test("a holder dropped during a rebalance (its sync answered 'unknown member') has lost its lease", .timeLimit(.minutes(2)))
    func memberDroppedDuringRebalance() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let lease = try await ReplayLease.acquire(group: "replay-\(UUID().uuidString.prefix(6))", configuration: configuration, logger: testLogger)
            #expect(lease.lossByMemberID == nil, "held")
            // Told to rebalance by its heartbeat (REBALANCE_IN_PROGRESS), then its SyncGroup finds it unknown.
            try kafka.failRequests(apiKey: 14, count: 1, errorCode: 25)
            try kafka.failRequests(apiKey: 12, count: 1, errorCode: 27)
            let loss = await loss(of: lease, within: .seconds(40))
            let lossByMemberID = lease.lossByMemberID
            await lease.release()
            #expect(loss?.cause.contains("lost its place there (the coordinator dropped it during a rebalance") == true, "\(loss.map(String.init(describing:)) ?? "no loss within 40 s")")
            #expect(lossByMemberID?.cause.contains("is no longer in it as the member that took the lease") == true, "its id tells it too")
        }
    }

    /// A holder whose heartbeats go unanswered for its session (the process paused, the coordinator out of reach) has
    /// lost its lease: the coordinator drops it. librdkafka reports the lost partitions; its member id, forgotten at
    /// once, tells it to a replay that failed before it followed `lost()` to the end.
    @Test("a holder whose session times out has lost its lease, which its member id tells at once", .timeLimit(.minutes(2)))
    func memberSessionTimedOut() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let group = "replay-\(UUID().uuidString.prefix(6))"
            let lease = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            #expect(lease.lossByMemberID == nil, "held")
            #expect(await lease.loss(within: .milliseconds(600)) == nil, "held, asked for a while")
            // COORDINATOR_NOT_AVAILABLE to every heartbeat: the session (6 s here) runs out.
            try kafka.failRequests(apiKey: 12, count: 1_000, errorCode: 15)
            let loss = await loss(of: lease, within: .seconds(40))
            let lossByMemberID = lease.lossByMemberID
            await lease.release()
            #expect(loss?.cause.contains("lost its place there (its session timed out") == true, "\(loss.map(String.init(describing:)) ?? "no loss within 40 s")")
            #expect(lossByMemberID.map(String.init(describing:))?.hasPrefix("the replay lost its lease of --group \(group): its member of the lease group") == true)
        }
    }

    /// A lease member whose consumer fails for good (a fatal error, here the one a fenced static member gets) can no
    /// longer tell whether it holds the lease: that is a loss too, naming the error.
    @Test("a holder whose lease member fails for good has lost its lease, and says why", .timeLimit(.minutes(2)))
    func memberFailedForGood() async throws {
        try await withPipelineCluster(partitions: 1) { _, configuration in
            let group = "replay-\(UUID().uuidString.prefix(6))"
            let lease = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            #expect(lease.consumer.simulateFatalError())
            let loss = await loss(of: lease, within: .seconds(30))
            await lease.release()
            let description = loss.map(String.init(describing:)) ?? "no loss within 30 s"
            #expect(description.contains("the replay lost its lease of --group \(group): its member of the lease group \(group).replay-lease failed:"), "\(description)")
            #expect(description.contains("simulated fencing"), "names the consumer's error: \(description)")
        }
    }

    /// What `lease.lost()` returns within `limit`; `nil` when it has not returned by then.
    private func loss(of lease: ReplayLease, within limit: Duration) async -> ReplayLeaseLost? {
        await withTaskGroup(of: ReplayLeaseLost?.self) { tasks in
            tasks.addTask { await lease.lost() }
            tasks.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            defer { tasks.cancelAll() }
            return await tasks.next() ?? nil
        }
    }
}
