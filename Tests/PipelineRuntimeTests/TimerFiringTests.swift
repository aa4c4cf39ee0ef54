import Foundation
import PipelineCore
@testable import PipelineRuntime
import Synchronization
import Testing

@Suite("Which partitions' timers fire here, and their expiries in flight")
struct TimerFiringTests {
    private func timer(_ id: String, partition: Int32) -> TimerBook.PendingTimer {
        let identity = MessageIdentity(messageId: id, eventId: id, campaignId: nil, recipientId: nil, platform: .fcm, template: "timer")
        return TimerBook.PendingTimer(identity: identity, expiresAt: Timestamp(secondsSince1970: 1_800_000_000, nanoseconds: 0), partition: partition)
    }

    @Test("a partition fires once marked ready under its assignment generation; assigned again, it waits for a new catch-up")
    func readyByGeneration() {
        let firing = TimerFiring()
        #expect(firing.startCatchUp(among: [0: 1, 1: 1]) == [0: 1, 1: 1])
        #expect(firing.startCatchUp(among: [0: 1, 1: 1]).isEmpty, "each catch-up starts once")
        firing.markReady(0, generation: 1)
        #expect(firing.startCatchUp(among: [0: 1, 1: 1]).isEmpty)
        // Given back after a rebalance: a new generation.
        #expect(firing.startCatchUp(among: [0: 2]) == [0: 2])
        // An earlier generation's catch-up ending after a later one's leaves the later one ready.
        _ = firing.startCatchUp(among: [2: 4])
        firing.markReady(2, generation: 4)
        firing.markReady(2, generation: 3)
        #expect(firing.startCatchUp(among: [2: 4]).isEmpty)
        let asked = Mutex<Set<Int32>?>(nil)
        let due = firing.takeDue(assigned: { [0: 1, 1: 1] }) { partitions in
            asked.withLock { $0 = partitions }
            return [timer("a", partition: 0)]
        }
        #expect(asked.withLock { $0 } == [0], "only the ready partition is asked for its due timers")
        #expect(due.map(\.timer.partition) == [0] && due.map(\.generation) == [1] && firing.inFlight(of: 0) == 1)
        // Assigned under another generation than the one caught up: nothing fires.
        let none = firing.takeDue(assigned: { [0: 2] }) { _ in
            Issue.record("asked for due timers of a partition not caught up under its generation")
            return []
        }
        #expect(none.isEmpty)
        firing.tombstoned(0, generation: 1)
        #expect(firing.inFlight(of: 0) == 0)
        firing.tombstoned(0, generation: 1)
        #expect(firing.inFlight(of: 0) == 0, "never below zero")
    }

    @Test("a fence waits for the tombstones of the expiries in flight, at most until its deadline, and stops the firing")
    func fenceWaitsForTombstones() async {
        let firing = TimerFiring()
        firing.markReady(0, generation: 1)
        firing.markReady(1, generation: 1)
        _ = firing.takeDue(assigned: { [0: 1, 1: 1] }) { _ in [timer("a", partition: 0), timer("b", partition: 0), timer("c", partition: 1)] }
        #expect(firing.inFlight(of: 0) == 2 && firing.inFlight(of: 1) == 1)
        let started = ContinuousClock.now
        // The tombstones land, from another thread, while the fence waits.
        let landing = Thread {
            Thread.sleep(forTimeInterval: 0.2)
            firing.tombstoned(0, generation: 1)
            firing.tombstoned(0, generation: 1)
        }
        landing.start()
        let left = firing.fence([0], until: .now + .seconds(30))
        #expect(left.isEmpty)
        #expect(ContinuousClock.now - started >= .milliseconds(150), "it waited for them")
        #expect(firing.startCatchUp(among: [0: 1]) == [0: 1], "a fenced partition fires no more under that generation")
        // Partition 1's tombstone never comes: the fence gives up at its deadline, and counts it no more (a later
        // revocation does not wait for it again).
        #expect(firing.fence([1], until: .now + .milliseconds(50)) == [1])
        #expect(firing.inFlight(of: 1) == 0)
        // Given back, partition 1 fires again; the late acknowledgement of the expiry given up on does not count as
        // the new one's.
        firing.markReady(1, generation: 2)
        _ = firing.takeDue(assigned: { [1: 2] }) { _ in [timer("d", partition: 1)] }
        firing.tombstoned(1, generation: 1)
        #expect(firing.inFlight(of: 1) == 1)
    }
}
