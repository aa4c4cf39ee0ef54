/// How a sink retries a notification the platform could not take yet (``SinkFailure/Code/throttled`` and
/// ``SinkFailure/Code/unavailable``): exponential backoff with jitter, the platform's `Retry-After` when it gives
/// one, and a deadline after which the notification fails for good.
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failed attempt; it doubles with every further failure.
    public var initialBackoff: Duration
    /// The longest wait between two attempts (a `Retry-After` may ask for longer, and is honoured).
    public var maxBackoff: Duration
    /// Up to this fraction of the backoff is added at random, so many failed notifications do not retry in lockstep.
    public var jitter: Double
    /// How long after its first attempt a notification may still be retried; past it, it fails with the last reason.
    public var deadline: Duration
    /// The wait after an answer that throttles the whole sink without a `Retry-After` (FCM asks for at least a minute
    /// after `QUOTA_EXCEEDED`: its quota refills by the minute); the sink sends nothing meanwhile.
    public var throttledBackoff: Duration

    /// Creates a policy. The defaults suit FCM and APNs: 0.5 s doubling up to 60 s, 20 % jitter, 10 minutes, and a
    /// minute after a sink-wide throttle that names no `Retry-After`.
    public init(
        initialBackoff: Duration = .milliseconds(500),
        maxBackoff: Duration = .seconds(60),
        jitter: Double = 0.2,
        deadline: Duration = .seconds(600),
        throttledBackoff: Duration = .seconds(60)
    ) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.jitter = jitter
        self.deadline = deadline
        self.throttledBackoff = throttledBackoff
    }

    /// The longest `Retry-After` honoured: a longer one (a broken proxy's, or one past any deadline) is taken as this.
    public static let longestRetryAfter: Duration = .seconds(86_400)

    /// How long an answer holds back every attempt of the sink: a throttle of the whole sink (``ThrottleScope/sink``;
    /// not one recipient's limit, nor one that may be) for its `Retry-After` (at least
    /// ``initialBackoff``, at most ``longestRetryAfter``), or ``throttledBackoff`` without one; `nil` for any other
    /// answer.
    public func sinkWideHold(after failure: SinkFailure) -> Duration? {
        guard failure.code == .throttled, failure.throttleScope == .sink else { return nil }
        // A `Retry-After: 0` (or a date already past) is no reason for the rest of the queue to meet the quota at once.
        return failure.retryAfter.map { max(min($0, Self.longestRetryAfter), initialBackoff) } ?? throttledBackoff
    }

    /// The wait before the next attempt of a notification whose `attempts`th attempt failed with `failure`: at least
    /// the sink-wide hold it caused (``sinkWideHold(after:)``), otherwise ``delay(afterAttempts:retryAfter:random:)``.
    public func delay(after failure: SinkFailure, attempts: Int, random: Double) -> Duration {
        delay(afterAttempts: attempts, retryAfter: failure.retryAfter ?? sinkWideHold(after: failure), random: random)
    }

    /// The wait before the next attempt after `attempts` failed ones.
    ///
    /// - Parameters:
    ///   - attempts: how many attempts failed so far (1 after the first).
    ///   - retryAfter: the platform's `Retry-After`: the wait is at least this (at most ``longestRetryAfter``), and
    ///     still the backoff when that is longer, so that a platform answering the same `Retry-After` again and
    ///     again is retried ever less often (FCM asks for both), with jitter on top.
    ///   - random: a number in `0..<1` choosing the jitter.
    public func delay(afterAttempts attempts: Int, retryAfter: Duration?, random: Double) -> Duration {
        let spread = jitter * min(max(random, 0), 1)
        var backoff = initialBackoff
        for _ in 1..<max(1, min(attempts, 40)) where backoff < maxBackoff { backoff *= 2 }
        // Never sooner than asked, never sooner than the backoff (a `Retry-After: 0` is no reason to hammer),
        // and spread out so every throttled notification does not come back at the same instant.
        let base = max(min(retryAfter ?? .zero, Self.longestRetryAfter), min(backoff, maxBackoff))
        return base + base * spread
    }
}

/// Time as a sink's retries see it: the real monotonic clock, or a virtual one in tests (where sleeping only
/// advances the virtual time, so retry timing can be checked exactly and instantly).
public struct RetryClock: Sendable {
    /// Monotonic time since an arbitrary origin.
    public var now: @Sendable () -> Duration
    /// Waits for a duration; throws `CancellationError` when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void

    /// Creates a clock from its two operations.
    public init(now: @escaping @Sendable () -> Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// The process's continuous clock.
    public static var continuous: RetryClock {
        let origin = ContinuousClock.now
        return RetryClock(now: { ContinuousClock.now - origin }, sleep: { try await Task.sleep(for: $0) })
    }
}

/// The attempts of one notification under a ``RetryPolicy``.
public enum RetryingDelivery {
    /// The end of the attempts.
    public enum Result: Sendable, Equatable {
        /// An attempt succeeded.
        case delivered(attempts: Int)
        /// The last attempt failed with a reason retrying cannot help, or the deadline passed; `attempts` is set.
        case failed(SinkFailure)
        /// Ended without the platform's last word: the task was cancelled (the pipeline is shutting down) while
        /// waiting to retry or during an attempt that then failed in a way a retry could help, or `stopReason` gave a
        /// reason before an attempt.
        case cancelled(SinkFailure)
    }

    /// Makes attempts until one succeeds, one fails for good, or the deadline passes.
    ///
    /// - Parameters:
    ///   - policy: backoff, jitter and deadline.
    ///   - clock: the clock to wait on.
    ///   - random: jitter source, a number in `0..<1` per call.
    ///   - willRetry: told before each wait, with the failure and the wait (to log).
    ///   - stopReason: asked before each attempt; a reason ends the delivery as ``Result/cancelled(_:)`` unattempted.
    ///   - holdBack: asked before each attempt: how long the whole sink is held back from now (a throttle of the
    ///     sink, ``RetryPolicy/sinkWideHold(after:)``), waited out first; `nil` when it is not.
    ///   - attempt: one attempt, given its number (1 for the first); `nil` when it succeeded.
    public static func run(
        policy: RetryPolicy,
        clock: RetryClock,
        random: @Sendable () -> Double = { Double.random(in: 0..<1) },
        willRetry: (SinkFailure, Duration) -> Void = { _, _ in },
        stopReason: () -> SinkFailure? = { nil },
        holdBack: () -> Duration? = { nil },
        attempt: (Int) async -> SinkFailure?
    ) async -> Result {
        await run(
            policy: policy,
            clock: clock,
            random: random,
            permits: nil,
            willRetry: willRetry,
            stopReason: stopReason,
            holdBack: holdBack,
            attempt: attempt
        )
    }

    /// ``run(policy:clock:random:willRetry:stopReason:holdBack:attempt:)`` holding one of `permits` for each
    /// attempt (and only then): taken before `stopReason` is asked, so a delivery that waited for its turn sees a stop
    /// that came meanwhile, and given back when the attempt ends.
    static func run(
        policy: RetryPolicy,
        clock: RetryClock,
        random: @Sendable () -> Double = { Double.random(in: 0..<1) },
        permits: AttemptPermits?,
        willRetry: (SinkFailure, Duration) -> Void = { _, _ in },
        stopReason: () -> SinkFailure? = { nil },
        holdBack: () -> Duration? = { nil },
        attempt: (Int) async -> SinkFailure?
    ) async -> Result {
        // Set at the first attempt: the deadline counts from there, not from the wait for a permit before it (behind
        // a backlog, or other recipients' attempts timing out), which is no retrying.
        var start = Duration.zero
        var attempts = 0
        var last: SinkFailure?
        while true {
            // The whole sink is held (throttled): no attempt until that passes, however many are queued.
            while let hold = holdBack() {
                if let reason = stopReason() { return .cancelled(reason) }
                do {
                    try await clock.sleep(hold)
                } catch {
                    return .cancelled(last ?? SinkFailure(.unavailable, "cancelled while the sink was throttled (shutting down)", attempts: attempts))
                }
            }
            if var failure = last, clock.now() - start > policy.deadline {
                failure.detail += " (gave up after \(attempts) attempt\(attempts == 1 ? "" : "s"): the sink was throttled past the retry deadline of \(Self.seconds(policy.deadline)))"
                return .failed(failure)
            }
            if let permits, !(await permits.acquire()) {
                return .cancelled(SinkFailure(.unavailable, "cancelled while waiting for its turn to be sent (shutting down)", attempts: attempts))
            }
            if let reason = stopReason() {
                permits?.release()
                return .cancelled(reason)
            }
            // Throttled while it waited for its turn (a backlog lines up for the permits before any answer comes):
            // the hold is waited out without the permit, as by those that came after it.
            if permits != nil, holdBack() != nil {
                permits?.release()
                continue
            }
            if attempts == 0 { start = clock.now() }
            attempts += 1
            let answer = await attempt(attempts)
            permits?.release()
            guard var failure = answer else { return .delivered(attempts: attempts) }
            failure.attempts = attempts
            guard failure.isRetryable else { return .failed(failure) }
            // Cancelled (shutting down) during the attempt, which is then no answer of the platform: there is no next
            // attempt to wait for, and the deadline does not make it a failure.
            if Task.isCancelled { return .cancelled(failure) }
            let wait = policy.delay(after: failure, attempts: attempts, random: random())
            let elapsed = clock.now() - start
            if elapsed + wait > policy.deadline {
                let asked = failure.retryAfter.map { " (Retry-After \(Self.seconds($0)))" } ?? ""
                failure.detail +=
                    " (gave up after \(attempts) attempt\(attempts == 1 ? "" : "s") over \(Self.seconds(elapsed)): the next was due in \(Self.seconds(wait))\(asked), "
                    + "past the retry deadline of \(Self.seconds(policy.deadline)))"
                return .failed(failure)
            }
            willRetry(failure, wait)
            last = failure
            do {
                try await clock.sleep(wait)
            } catch {
                return .cancelled(failure)
            }
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = attoseconds / 100_000_000_000_000_000
        return "\(seconds).\(tenths) s"
    }
}
