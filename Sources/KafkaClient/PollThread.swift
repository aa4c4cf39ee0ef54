import Foundation
import Synchronization

/// A thread of our own that runs a client's poll loop, so blocking librdkafka polls never occupy the cooperative
/// pool. It runs `body` until the body returns; ``stop()`` asks it to and waits for it.
final class PollThread: Sendable {
    private struct State {
        var isStopRequested = false
        var hasExited = false
        /// Tasks waiting for the thread to end, by the number each was given; resumed with `true` when it has.
        var exitWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// Starts a thread that runs `body`, which should return soon after ``isStopRequested`` becomes true.
    init(name: String, body: @escaping @Sendable (PollThread) -> Void) {
        let thread = Thread { [self] in
            body(self)
            let waiters = state.withLock { state in
                state.hasExited = true
                defer { state.exitWaiters = [:] }
                return state.exitWaiters
            }
            for waiter in waiters.values { waiter.resume(returning: true) }
        }
        thread.name = name
        thread.start()
    }

    /// Whether the thread has finished.
    var hasExited: Bool { state.withLock { $0.hasExited } }

    /// Whether the owner asked the loop to end.
    var isStopRequested: Bool { state.withLock { $0.isStopRequested } }

    /// Asks the loop to end without waiting.
    func requestStop() {
        state.withLock { $0.isStopRequested = true }
    }

    /// Asks the loop to end and waits until the thread has finished, or until `limit` has passed (`nil`: until it
    /// has finished, even when the task is cancelled).
    ///
    /// - Returns: whether the thread finished in time (otherwise it goes on, and ends by itself).
    @discardableResult
    func stop(within limit: Duration? = nil) async -> Bool {
        requestStop()
        guard let limit else {
            let waiter = newWaiter()
            return await withCheckedContinuation { continuation in
                wait(continuation, as: waiter, unlessCancelled: false)
            }
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForExitUntilCancelled() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let finished = await group.next() ?? false
            group.cancelAll()
            return finished
        }
    }

    /// Waits until the thread has finished (`true`), or the task is cancelled (`false`).
    private func waitForExitUntilCancelled() async -> Bool {
        let waiter = newWaiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                wait(continuation, as: waiter, unlessCancelled: true)
            }
        } onCancel: {
            state.withLock { $0.exitWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
        }
    }

    private func newWaiter() -> Int {
        state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
    }

    /// Keeps `continuation` to be resumed when the thread finishes, or resumes it now: `true` when it has finished,
    /// `false` when `unlessCancelled` and the task was cancelled before (its cancellation handler found nothing).
    private func wait(_ continuation: CheckedContinuation<Bool, Never>, as waiter: Int, unlessCancelled: Bool) {
        let answer: Bool? = state.withLock { state in
            if state.hasExited { return true }
            if unlessCancelled, Task.isCancelled { return false }
            state.exitWaiters[waiter] = continuation
            return nil
        }
        if let answer { continuation.resume(returning: answer) }
    }
}
