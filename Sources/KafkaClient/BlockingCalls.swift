import Foundation
import Synchronization

/// Runs librdkafka calls that block (sync commit, offset and metadata look-ups, record probes) each on a thread of
/// its own, so they never hold a thread of Swift's cooperative pool, nor wait behind one another: a concurrent
/// dispatch queue runs only a few blocks at once on Linux (three on a 2-core machine), so slow calls (record probes
/// waiting seconds for a fetch) held up every commit and look-up behind them.
enum BlockingCalls {
    /// Runs `body` off the cooperative pool and returns its result. The caller waits for it even when its task is
    /// cancelled: for calls whose effect must be known (commits, closing, flushing).
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.name = "kafka-blocking-call"
            thread.start()
        }
    }

    /// Runs a throwing `body` off the cooperative pool. The caller waits for it even when its task is cancelled.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        let result: Result<T, KafkaError> = await run {
            do throws(KafkaError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Runs a look-up (`body` changes nothing: watermarks, committed offsets, metadata, record probes) off the
    /// cooperative pool, and stops waiting for it when the caller's task is cancelled, or once `limit` (and a second
    /// for librdkafka's own answer) has passed: librdkafka can wait longer than the timeout it is given (2.0.2's
    /// watermark query waits for its requests' answers with no deadline, minutes when the brokers are gone), and a
    /// stopping pipeline must not wait with it. An abandoned call ends on its thread in its own time (its result is
    /// dropped); a task cancelled before the call starts never makes it.
    ///
    /// - Parameters:
    ///   - what: what is looked up, for the errors.
    ///   - code: the error's code when `limit` passes.
    ///   - limit: the longest to wait (`nil`: until the call ends or the task is cancelled).
    /// - Throws: ``KafkaError/Code/cancelled`` when the task was cancelled first; `code` (`_TIMED_OUT`) when `limit`
    ///   passed first; otherwise what `body` threw.
    static func lookUp<T: Sendable>(
        _ what: String,
        failingWith code: KafkaError.Code,
        within limit: Duration?,
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        try await abandonable(what, failingWith: code, within: limit, grace: .seconds(1), note: "the call was abandoned", body)
    }

    /// Runs a call that takes no timeout of its own (a commit, a consumer's close: librdkafka waits for a group
    /// coordinator until the group's session times out) off the cooperative pool. With a `limit`, it is waited for at
    /// most that long, and not at all once the caller's task is cancelled; a call no longer waited for still ends on
    /// its thread, and still takes effect when it does (a commit may land later). Without one, it is waited for to its
    /// end, even by a cancelled task, as `run` waits.
    ///
    /// - Throws: ``KafkaError/Code/cancelled`` when the task was cancelled first; `code` (`_TIMED_OUT`) when `limit`
    ///   passed first; otherwise what `body` threw.
    static func waitingAtMost<T: Sendable>(
        _ limit: Duration?,
        for what: String,
        failingWith code: KafkaError.Code,
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        guard let limit else { return try await run(body) }
        return try await abandonable(what, failingWith: code, within: limit, grace: .zero, note: "no longer waited for; it may still take effect", body)
    }

    /// The waiting of ``lookUp(_:failingWith:within:_:)`` and ``waitingAtMost(_:for:failingWith:_:)``: it gives up
    /// after `limit` plus `grace` and reports `limit`, with `note` on what became of the call.
    private static func abandonable<T: Sendable>(
        _ what: String,
        failingWith code: KafkaError.Code,
        within limit: Duration?,
        grace: Duration,
        note: String,
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        let outcome: WaitOutcome<T>
        if let limit {
            outcome = await withTaskGroup(of: WaitOutcome<T>.self) { group in
                group.addTask { await waitAbandoningOnCancel(body) }
                group.addTask {
                    do { try await Task.sleep(for: limit + grace) } catch { return .abandoned }
                    return .timedOut
                }
                let first = await group.next() ?? .abandoned
                group.cancelAll()
                return first
            }
        } else {
            outcome = await waitAbandoningOnCancel(body)
        }
        switch outcome {
        case .answered(let result):
            return try result.get()
        case .abandoned:
            throw KafkaError(code: .cancelled, message: "stopped waiting for \(what): the task was cancelled")
        case .timedOut:
            throw KafkaError(
                code: code,
                message: "no answer for \(what) within \(Self.seconds(limit ?? .zero)) (\(note))",
                librdkafkaName: "_TIMED_OUT",
                isRetriable: true
            )
        }
    }

    /// `10.0 s`: a limit computed from a deadline is a hair under a round number, which `Duration` prints in full.
    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// How the wait for an abandonable call ended for its caller.
    private enum WaitOutcome<T: Sendable>: Sendable {
        case answered(Result<T, KafkaError>)
        case abandoned
        case timedOut
    }

    /// Runs `body` on a thread of its own and waits for it until the task is cancelled.
    private static func waitAbandoningOnCancel<T: Sendable>(
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async -> WaitOutcome<T> {
        let call = AbandonableCall<T>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard call.begin(continuation) else { return }
                let thread = Thread {
                    let result: Result<T, KafkaError>
                    do throws(KafkaError) { result = .success(try body()) } catch { result = .failure(error) }
                    call.finish(result)
                }
                thread.name = "kafka-blocking-call"
                thread.start()
            }
        } onCancel: {
            call.abandon()
        }
        return result.map { .answered($0) } ?? .abandoned
    }
}

/// The meeting point of a look-up's thread and the task waiting for it, whichever of finishing and abandoning comes
/// first (the other does nothing). `nil` is the abandoned call's result.
private final class AbandonableCall<T: Sendable>: Sendable {
    private enum State {
        case notBegun
        case waiting(CheckedContinuation<Result<T, KafkaError>?, Never>)
        /// Finished, or abandoned (before it began, too).
        case over
    }

    private let state = Mutex(State.notBegun)

    /// Takes the waiting task's continuation. `false` when the task was cancelled before (the continuation is then
    /// resumed here, and the call is not to be made).
    func begin(_ continuation: CheckedContinuation<Result<T, KafkaError>?, Never>) -> Bool {
        let begins = state.withLock { state in
            guard case .notBegun = state else { return false }
            state = .waiting(continuation)
            return true
        }
        if !begins { continuation.resume(returning: nil) }
        return begins
    }

    /// Hands the call's result to the waiting task, unless it stopped waiting.
    func finish(_ result: Result<T, KafkaError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<T, KafkaError>?, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .over
            return continuation
        }
        continuation?.resume(returning: result)
    }

    /// Ends the waiting task's wait (its task was cancelled), or, before the call began, keeps it from beginning.
    func abandon() {
        let continuation = state.withLock { state -> CheckedContinuation<Result<T, KafkaError>?, Never>? in
            switch state {
            case .notBegun, .over:
                state = .over
                return nil
            case .waiting(let continuation):
                state = .over
                return continuation
            }
        }
        continuation?.resume(returning: nil)
    }
}
