/// Runs `operation` and calls `notice` once if it has not finished after `delay`: a wait the user should hear about
/// instead of staring at a silent terminal (a replay waiting for its group's lease).
///
/// - Returns: what `operation` returns; its error, if it throws.
func withNotice<T: Sendable>(
    after delay: Duration,
    _ notice: @escaping @Sendable () -> Void,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: WaitStep<T>.self) { tasks in
        tasks.addTask { .done(try await operation()) }
        tasks.addTask {
            // Cancelled once the operation is done: nothing is said.
            try await Task.sleep(for: delay)
            notice()
            return .noticed
        }
        defer { tasks.cancelAll() }
        while let step = try await tasks.next() {
            if case .done(let value) = step { return value }
        }
        preconditionFailure("the operation's task ended without a result")
    }
}

/// A task of ``withNotice(after:_:_:)``: the operation's result, or the notice said.
private enum WaitStep<T: Sendable>: Sendable {
    case done(T)
    case noticed
}
