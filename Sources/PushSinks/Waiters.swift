/// Tasks waiting for a value, in the order they began to wait; one cancelled before its turn leaves the line. Kept
/// inside a lock's state (``KeyedWorkQueue``, ``AttemptPermits``), which resumes the continuations it takes out
/// after unlocking.
struct Waiters<Value: Sendable> {
    private var continuations: [Int: CheckedContinuation<Value, Never>] = [:]
    private var order: [Int] = []
    private var nextID = 0

    /// An id for a new waiter.
    mutating func makeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// Puts the waiter `id` last in line.
    mutating func enqueue(_ id: Int, _ continuation: CheckedContinuation<Value, Never>) {
        continuations[id] = continuation
        order.append(id)
    }

    /// How many are waiting.
    var count: Int { continuations.count }

    /// Takes the waiter `id` out of line (its task was cancelled); `nil` when it is no longer waiting.
    mutating func remove(_ id: Int) -> CheckedContinuation<Value, Never>? {
        order.removeAll { $0 == id }
        return continuations.removeValue(forKey: id)
    }

    /// Takes the first waiter out of line.
    mutating func popFirst() -> CheckedContinuation<Value, Never>? {
        while !order.isEmpty {
            if let continuation = continuations.removeValue(forKey: order.removeFirst()) { return continuation }
        }
        return nil
    }

    /// Takes every waiter out of line.
    mutating func removeAll() -> [CheckedContinuation<Value, Never>] {
        defer {
            continuations = [:]
            order = []
        }
        return Array(continuations.values)
    }
}
