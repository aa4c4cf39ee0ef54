import Synchronization

/// Jobs where those of one key (one recipient) run strictly one after another, in the order they were submitted, and
/// those of different keys run in parallel: ``RetryingSink`` takes each ready job and delivers it in a task of its
/// own, bounded by ``AttemptPermits`` while it makes attempts.
///
/// A key is *ready* when it has jobs and none of them is running; workers take ready keys in the order they became
/// ready, so no key starves another.
final class KeyedWorkQueue<Job: Sendable>: Sendable {
    private struct State {
        /// The jobs of each key with work; the first is running or next to run.
        var jobs: [String: [Job]] = [:]
        /// Keys whose first job waits for a worker, in the order they became ready (`readyHead` is the next one).
        var ready: [String] = []
        var readyHead = 0
        var waiters = Waiters<(key: String, job: Job)?>()
        var isClosed = false
        var count = 0

        mutating func makeReady(_ key: String) -> (CheckedContinuation<(key: String, job: Job)?, Never>, Job)? {
            if let job = jobs[key]?.first, let waiter = waiters.popFirst() {
                return (waiter, job)
            }
            ready.append(key)
            return nil
        }

        mutating func takeReady() -> (key: String, job: Job)? {
            guard readyHead < ready.count else { return nil }
            let key = ready[readyHead]
            readyHead += 1
            if readyHead > 256, readyHead * 2 > ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            guard let job = jobs[key]?.first else { return nil }
            return (key, job)
        }
    }

    private let state = Mutex(State())

    init() {}

    /// Jobs queued or running.
    var count: Int { state.withLock { $0.count } }

    /// Adds a job behind the other jobs of its key.
    ///
    /// - Returns: `false` (adding nothing) when the queue is closed.
    func submit(_ job: Job, key: String) -> Bool {
        let (accepted, handOver) = state.withLock { state -> (Bool, (CheckedContinuation<(key: String, job: Job)?, Never>, Job)?) in
            guard !state.isClosed else { return (false, nil) }
            state.count += 1
            if state.jobs[key] != nil {
                state.jobs[key]!.append(job)
                return (true, nil)
            }
            state.jobs[key] = [job]
            return (true, state.makeReady(key))
        }
        if let (waiter, job) = handOver { waiter.resume(returning: (key, job)) }
        return accepted
    }

    /// The next job to run, waiting for one; `nil` when the queue is closed or the task is cancelled. The worker must
    /// call ``finished(key:)`` when the job is done.
    func next() async -> (key: String, job: Job)? {
        let id = state.withLock { $0.waiters.makeID() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<(key: String, job: Job)?, Never>) in
                let immediate: (key: String, job: Job)?? = state.withLock { state in
                    if state.isClosed || Task.isCancelled { return .some(nil) }
                    if let work = state.takeReady() { return .some(work) }
                    state.waiters.enqueue(id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            state.withLock { $0.waiters.remove(id) }?.resume(returning: nil)
        }
    }

    /// Marks the running job of `key` done, making the key's next job ready.
    func finished(key: String) {
        let handOver: (CheckedContinuation<(key: String, job: Job)?, Never>, Job)? = state.withLock { state in
            guard state.jobs[key]?.isEmpty == false else { return nil }
            state.jobs[key]!.removeFirst()
            state.count -= 1
            if state.jobs[key]!.isEmpty {
                state.jobs[key] = nil
                return nil
            }
            return state.isClosed ? nil : state.makeReady(key)
        }
        if let (waiter, job) = handOver { waiter.resume(returning: (key, job)) }
    }

    /// Closes the queue: waiting workers get `nil`, and every job not yet started is returned (to be answered by the
    /// caller). Jobs running now stay counted until their worker calls ``finished(key:)``.
    func close() -> [Job] {
        let (waiters, pending) = state.withLock { state in
            state.isClosed = true
            var pending: [Job] = []
            let waiting = Set(state.ready[state.readyHead...])
            for (key, queue) in state.jobs {
                // The first job of a key that is not in the ready list is running.
                let isRunning = !waiting.contains(key)
                pending += queue.dropFirst(isRunning ? 1 : 0)
                state.jobs[key] = isRunning ? Array(queue.prefix(1)) : nil
            }
            state.count -= pending.count
            state.ready = []
            state.readyHead = 0
            return (state.waiters.removeAll(), pending)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        return pending
    }
}
