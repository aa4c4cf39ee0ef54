import Foundation
import Synchronization

/// A thread of our own that runs a client's poll loop, so blocking librdkafka polls never occupy the cooperative
/// pool. It runs `body` until the body returns; ``stop()`` asks it to and waits for it.
final class PollThread: Sendable {
    private struct State {
        var isStopRequested = false
        var hasExited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Starts a thread that runs `body`, which should return soon after ``isStopRequested`` becomes true.
    init(name: String, body: @escaping @Sendable (PollThread) -> Void) {
        let thread = Thread { [self] in
            body(self)
            let waiters = state.withLock { state in
                state.hasExited = true
                defer { state.exitWaiters = [] }
                return state.exitWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = name
        thread.start()
    }

    /// Whether the owner asked the loop to end.
    var isStopRequested: Bool { state.withLock { $0.isStopRequested } }

    /// Asks the loop to end without waiting.
    func requestStop() {
        state.withLock { $0.isStopRequested = true }
    }

    /// Asks the loop to end and waits until the thread has finished.
    func stop() async {
        requestStop()
        await withCheckedContinuation { continuation in
            let hasExited = state.withLock { state in
                if !state.hasExited { state.exitWaiters.append(continuation) }
                return state.hasExited
            }
            if hasExited { continuation.resume() }
        }
    }
}
