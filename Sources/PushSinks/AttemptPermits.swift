import Synchronization

/// A fixed number of permits for attempts in flight, handed out in the order they were asked for: a delivery holds
/// one only while it makes an attempt, not while it waits to retry, so a notification waiting out a backoff or a
/// `Retry-After` does not hold back other recipients' notifications.
final class AttemptPermits: Sendable {
    private struct State {
        var available: Int
        var waiters = Waiters<Bool>()
    }

    private let state: Mutex<State>

    /// Permits for `count` attempts at once.
    init(_ count: Int) {
        state = Mutex(State(available: count))
    }

    /// Waits for a permit; `false`, without one, when the task is cancelled first. A `true` must be matched by
    /// ``release()``.
    func acquire() async -> Bool {
        let id = state.withLock { $0.waiters.makeID() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { state in
                    if Task.isCancelled { return false }
                    if state.available > 0 {
                        state.available -= 1
                        return true
                    }
                    state.waiters.enqueue(id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            state.withLock { $0.waiters.remove(id) }?.resume(returning: false)
        }
    }

    /// How many tasks are waiting for a permit.
    var waitingCount: Int {
        state.withLock { $0.waiters.count }
    }

    /// Gives a permit back, to the longest waiter if any.
    func release() {
        let next: CheckedContinuation<Bool, Never>? = state.withLock { state in
            if let waiter = state.waiters.popFirst() { return waiter }
            state.available += 1
            return nil
        }
        next?.resume(returning: true)
    }
}
