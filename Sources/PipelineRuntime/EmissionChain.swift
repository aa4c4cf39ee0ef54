/// The decided batches being emitted, oldest first. Each emission starts once the one before it has ended, so outputs
/// leave in read order; one that leaves its batch unemitted (cancelled while it waited for its records) ends the
/// chain, and every later one is left too, as their completed events would otherwise be committed past it.
///
/// Emissions are cancelled latest first, whoever cancels them: an emission goes on as soon as the one before it ends,
/// and one not cancelled yet would send its outputs straight to the producer, ahead of the outputs the earlier
/// emission's cancellation left waiting for room in the producer's queue (a later payload of a key written before an
/// earlier one; found by review).
struct EmissionChain {
    private var tasks: [Task<Bool, Never>] = []

    /// Adds an emission: `emit` runs once the latest one has ended, if that one emitted its batch, and returns whether
    /// it emitted its own.
    mutating func append(_ emit: @escaping @Sendable () async -> Bool) {
        let previous = tasks.last
        tasks.append(
            Task {
                guard await previous?.value ?? true else { return false }
                return await emit()
            }
        )
    }

    /// Waits for the oldest emissions to end until at most `limit` are left. A cancellation of the waiting task
    /// cancels every emission, latest first.
    mutating func wait(untilAtMost limit: Int) async {
        while tasks.count > limit {
            let oldest = tasks.removeFirst()
            let later = tasks
            await withTaskCancellationHandler {
                _ = await oldest.value
            } onCancel: {
                Self.cancel(later + [oldest])
            }
        }
    }

    /// Cancels every emission, latest first.
    func cancelAll() {
        Self.cancel(tasks)
    }

    /// Cancels `tasks` (oldest first) latest first.
    private static func cancel(_ tasks: [Task<Bool, Never>]) {
        for task in tasks.reversed() { task.cancel() }
    }
}
