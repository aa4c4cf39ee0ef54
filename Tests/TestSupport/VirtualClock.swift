package import PushSinks
import Synchronization

/// A clock whose sleeps return at once and only advance its time, recording each wait: retry timing is checked
/// exactly, without waiting.
package final class VirtualClock: Sendable {
    package init() {}

    private let state = Mutex<(now: Duration, sleeps: [Duration])>((.zero, []))

    /// The waits asked for, in order.
    package var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// The virtual time now.
    package var now: Duration { state.withLock { $0.now } }

    /// Moves the time forward (as if an attempt took that long).
    package func advance(by duration: Duration) {
        state.withLock { $0.now += duration }
    }

    package var retryClock: RetryClock {
        retryClock(beforeEachSleep: {})
    }

    /// ``retryClock`` that calls `beforeEachSleep` as each wait begins: a test reads there what holds while a
    /// notification waits for its retry (its sink's state).
    package func retryClock(beforeEachSleep: @escaping @Sendable () -> Void) -> RetryClock {
        RetryClock(
            now: { self.state.withLock { $0.now } },
            sleep: { duration in
                beforeEachSleep()
                try Task.checkCancellation()
                self.state.withLock { state in
                    state.sleeps.append(duration)
                    state.now += duration
                }
            }
        )
    }
}
