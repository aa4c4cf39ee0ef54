@testable import PushSinks
import Synchronization
import Testing

@Suite("Permits for attempts in flight", .timeLimit(.minutes(1)))
struct AttemptPermitsTests {
    /// What the waiters got, in the order they got it.
    final class Grants: Sendable {
        private let list = Mutex<[String]>([])
        func append(_ entry: String) { list.withLock { $0.append(entry) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// Permits go to waiters in the order they asked; a waiter cancelled before its turn gets none, and its place
    /// goes to the next.
    @Test func handsPermitsOutInOrderAndNotToACancelledWaiter() async throws {
        let permits = AttemptPermits(1)
        #expect(await permits.acquire())
        let order = Grants()
        let first = Task {
            let granted = await permits.acquire()
            order.append("first \(granted)")
            if granted { permits.release() }
        }
        while permits.waitingCount < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let cancelled = Task {
            let granted = await permits.acquire()
            order.append("cancelled \(granted)")
            if granted { permits.release() }
        }
        while permits.waitingCount < 2 { try await Task.sleep(for: .milliseconds(1)) }
        let last = Task {
            let granted = await permits.acquire()
            order.append("last \(granted)")
            if granted { permits.release() }
        }
        while permits.waitingCount < 3 { try await Task.sleep(for: .milliseconds(1)) }
        cancelled.cancel()
        await cancelled.value
        permits.release()
        await first.value
        await last.value
        #expect(order.all == ["cancelled false", "first true", "last true"])
        // Every permit is back: one can be taken at once.
        #expect(await permits.acquire())
    }

    @Test func aTaskCancelledBeforeAskingGetsNone() async {
        let permits = AttemptPermits(3)
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return await permits.acquire()
        }
        task.cancel()
        #expect(await task.value == false)
    }
}
