import Foundation
import KafkaClient
import PipelineRuntime
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
            #expect(loss == nil, "the holder lost nothing: \(loss.map(String.init(describing:)) ?? "")")
            let next = try await ReplayLease.acquire(group: group, configuration: configuration, logger: testLogger)
            await next.release()
        }
    }
}
