import Synchronization

/// Waiting for a task that may not end in time, without cancelling it or waiting past a deadline.
enum BoundedWait {
    /// Waits for `task` to end, but not past `deadline`; returns whether it ended. A task still running then goes on
    /// by itself (a replay's periodic commit waits for a group coordinator as long as librdkafka does, which with the
    /// brokers gone is past the shutdown's bound).
    static func wait(for task: Task<Void, Never>, until deadline: ContinuousClock.Instant) async -> Bool {
        let first = FirstAnswer()
        return await withCheckedContinuation { continuation in
            first.set(continuation)
            Task {
                await task.value
                first.answer(true)
            }
            Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                first.answer(false)
            }
        }
    }

    /// A continuation resumed by the first of several answers; the others are ignored.
    private final class FirstAnswer: Sendable {
        private let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)

        func set(_ continuation: CheckedContinuation<Bool, Never>) {
            self.continuation.withLock { $0 = continuation }
        }

        func answer(_ value: Bool) {
            continuation.withLock { $0.take() }?.resume(returning: value)
        }
    }
}
