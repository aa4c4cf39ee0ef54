public import Logging
public import PipelineCore
import Synchronization

/// One platform's single delivery attempt (an HTTP request to FCM or APNs). ``RetryingSink`` adds the queueing,
/// per-recipient order, bounded concurrency, retries and the stop on refused credentials.
public protocol PlatformSender: Sendable {
    /// The routing name (``PushSink/kind``).
    var kind: String { get }
    /// The analytics name (``PushSink/name``).
    var name: String { get }
    /// Makes one attempt; `nil` when the platform accepted the notification.
    func attempt(_ notification: RenderedNotification) async -> SinkFailure?
    /// Releases connections; called once when the sink stops running.
    func shutdown() async
}

extension PlatformSender {
    /// Nothing to release.
    public func shutdown() async {}
}

/// A ``PushSink`` over a ``PlatformSender``: at most `concurrency` attempts at a time, one recipient's
/// notifications strictly in submission order, ``RetryPolicy`` for throttled and unavailable answers (a throttle of
/// the whole sink holds every attempt until its `Retry-After` passes), and a stop (everything held reported
/// ``SinkOutcome/abandoned(_:)``) when the platform refuses the sink's credentials.
public final class RetryingSink<Sender: PlatformSender>: PushSink {
    private struct Job: Sendable {
        var notification: RenderedNotification
        var isCancelled: @Sendable () -> Bool
        var completion: @Sendable (SinkOutcome) -> Void
    }

    private struct Health {
        var stopped: SinkFailure?
        /// Set by a throttled answer, cleared by an accepted notification at least a second later (or when nothing
        /// is left to send): the gap between a `Retry-After` ending and the next answer does not count as recovered.
        var isThrottled = false
        var lastThrottled: Duration = .zero
        /// Until when (clock time) the whole sink is held back by its last sink-wide throttle: no attempt is made
        /// before, so a quota's `Retry-After` is not answered by the rest of the queue at full speed.
        var heldUntil: Duration = .zero
        /// Whether the platform has shown the sink's configuration right since the sink started: it accepted a
        /// notification, or said a token is no longer registered (``SinkFailure/confirmsConfiguration``).
        var isConfirmed = false
        /// Dead-token answers in a row that a wrong configuration would also give, while it was never confirmed.
        var refusalsInARow = 0
        /// The recipient of the last throttle that may have been its device's alone
        /// (``ThrottleScope/sinkOrRecipient``), until a notification is accepted.
        var unscopedThrottleRecipient: String?
        var lastRetryLog: Duration?
        var retriesSinceLog = 0
    }

    /// The platform's attempt.
    public let sender: Sender
    /// The most attempts in flight at once.
    public let concurrency: Int
    /// Backoff, jitter and deadline.
    public let policy: RetryPolicy
    /// After this many `invalid_token` answers in a row that a wrong configuration would also give (not a token
    /// reported no longer registered, ``SinkFailure/confirmsConfiguration``, nor one the sender refused without sending
    /// it, ``SinkFailure/wasNotSent``), with no notification ever accepted,
    /// the sink stops instead of reporting more tokens dead: a wrong environment, topic or project makes every token
    /// look bad.
    public let refusalLimit: Int
    private let clock: RetryClock
    /// The wall clock a notification's `expiresAt` is compared with.
    private let wallClock: @Sendable () -> Timestamp
    private let logger: Logger
    private let queue = KeyedWorkQueue<Job>()
    private let health = Mutex(Health())

    /// Creates a sink.
    ///
    /// - Parameters:
    ///   - sender: makes single attempts.
    ///   - concurrency: the most attempts in flight at once (HTTP/2 streams, HTTP/1.1 requests).
    ///   - policy: how throttled and unavailable attempts are retried.
    ///   - clock: the clock retries wait on (a virtual one in tests).
    ///   - refusalLimit: dead-token answers in a row that point at the configuration, with none accepted yet, after
    ///     which the sink stops.
    ///   - wallClock: the time a notification's `expiresAt` is compared with before each attempt.
    ///   - logger: failures are logged here, rate-limited.
    public init(
        sender: Sender,
        concurrency: Int,
        policy: RetryPolicy,
        clock: RetryClock = .continuous,
        refusalLimit: Int = 50,
        wallClock: @escaping @Sendable () -> Timestamp = { Timestamp.now() },
        logger: Logger
    ) {
        self.sender = sender
        self.concurrency = max(1, concurrency)
        self.policy = policy
        self.refusalLimit = max(1, refusalLimit)
        self.clock = clock
        self.wallClock = wallClock
        self.logger = logger
    }

    public var kind: String { sender.kind }
    public var name: String { sender.name }

    public var state: SinkState {
        let isIdle = queue.count == 0
        return health.withLock { health in
            if let stopped = health.stopped { return .stopped(stopped) }
            if health.isThrottled, isIdle { health.isThrottled = false }
            return health.isThrottled ? .throttled : .ready
        }
    }

    /// Notifications queued or being attempted.
    public var pending: Int { queue.count }

    public func run() async {
        // One task per notification taken from the queue (one recipient's next only once its previous is answered);
        // attempts are bounded by the permits, which a notification holds only while it makes one, not while it
        // waits to retry: a recipient waiting out a backoff or a `Retry-After` does not hold back the others.
        let permits = AttemptPermits(concurrency)
        await withDiscardingTaskGroup { group in
            while let (key, job) = await queue.next() {
                group.addTask {
                    let outcome = await self.deliver(job, permits: permits)
                    job.completion(outcome)
                    self.queue.finished(key: key)
                }
            }
        }
        // Cancelled: what was not taken from the queue is answered, and so is anything submitted from now on (the
        // queue is closed), so that every notification has its one outcome.
        let stopped = SinkFailure(.unavailable, "\(name) stopped running before sending it (shutting down)")
        for job in queue.close() { job.completion(.abandoned(health.withLock { $0.stopped } ?? stopped)) }
        await sender.shutdown()
    }

    public func shutdown() async {
        await sender.shutdown()
    }

    public func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        if let stopped = health.withLock({ $0.stopped }) {
            completion(.abandoned(stopped))
            return
        }
        let job = Job(notification: notification, isCancelled: isCancelled, completion: completion)
        if !queue.submit(job, key: notification.recipientId) {
            completion(.abandoned(health.withLock { $0.stopped } ?? SinkFailure(.unavailable, "\(name) is shut down")))
        }
    }

    private func deliver(_ job: Job, permits: AttemptPermits) async -> SinkOutcome {
        // Set when this notification's dead-token answer reached the refusal limit and stopped the sink.
        var refusalStop: SinkFailure?
        // Set when its `expiresAt` passed before an attempt: it is then not sent.
        var expiredAt: Timestamp?
        let expiresAt = job.notification.request.expiresAt
        // An event read again is judged as at its first reading (``RenderedNotification/judgedEarlierBy``).
        let judgedEarlierBy = job.notification.judgedEarlierBy
        // The last attempt's number and failure, for the detail of an expiry.
        var lastAnswer: (number: Int, failure: SinkFailure)?
        let result = await RetryingDelivery.run(
            policy: policy,
            clock: clock,
            permits: permits,
            willRetry: { failure, wait in noteRetry(failure, wait: wait) },
            stopReason: {
                if let stopped = health.withLock({ $0.stopped }) { return stopped }
                if job.isCancelled() { return SinkFailure(.unavailable, "withdrawn: the event's partition moved to another instance") }
                if let expiresAt {
                    let now = wallClock()
                    if now.adding(.zero - judgedEarlierBy) >= expiresAt {
                        expiredAt = now
                        return SinkFailure(.unavailable, "expired before it could be sent")
                    }
                }
                return nil
            },
            holdBack: {
                let now = clock.now()
                return health.withLock { $0.heldUntil > now ? $0.heldUntil - now : nil }
            },
            attempt: { number in
                var failure = await sender.attempt(job.notification)
                // Judged while the attempt's permit is held: a stop it causes is seen by every attempt after it. The
                // failure comes back with its throttle's scope decided, so that its own next attempt waits as the
                // sink's do.
                refusalStop = judge(&failure, recipient: job.notification.recipientId)
                lastAnswer = failure.map { (number, $0) }
                return failure
            }
        )
        switch result {
        case .delivered(let attempts):
            return .delivered(attempts: attempts)
        case .failed(let failure) where failure.code == .auth:
            // Refused credentials: `judge` stopped the sink.
            return .abandoned(failure)
        case .failed(let failure):
            return refusalStop.map { .abandoned($0) } ?? .failed(failure)
        case .cancelled(let failure):
            if let expiredAt, let expiresAt {
                let tried = lastAnswer.map { " (\($0.number) attempt\($0.number == 1 ? "" : "s") failed, the last: \($0.failure.detail))" } ?? " (not attempted)"
                let judged = judgedEarlierBy > .zero ? ", judged as read \(judgedEarlierBy) earlier (its first reading)" : ""
                return .expired(detail: "not sent by \(expiredAt.rfc3339), after expiresAt \(expiresAt.rfc3339)\(judged)\(tried)")
            }
            return .abandoned(failure)
        }
    }

    /// Updates the sink's health with an attempt's answer for `recipient` (`nil`: accepted), stopping the sink on
    /// refused credentials; returns the stop's failure when this answer reached the refusal limit. A throttle that
    /// may be the sink's or the recipient's (``ThrottleScope/sinkOrRecipient``) is given the scope decided for it.
    private func judge(_ answer: inout SinkFailure?, recipient: String) -> SinkFailure? {
        guard var failure = answer else {
            let now = clock.now()
            health.withLock { health in
                health.isConfirmed = true
                health.refusalsInARow = 0
                health.unscopedThrottleRecipient = nil
                if now - health.lastThrottled >= .seconds(1) { health.isThrottled = false }
            }
            return nil
        }
        // A throttle of the whole sink (a quota, not one device's limit) holds every attempt of the sink, and marks
        // it throttled (the pipeline then stops reading for it), also when this notification is not retried.
        if failure.code == .throttled, failure.throttleScope == .sinkOrRecipient {
            failure.throttleScope = scope(ofUnscopedThrottleOf: recipient)
            answer = failure
        }
        if let hold = policy.sinkWideHold(after: failure) {
            let now = clock.now()
            health.withLock { health in
                health.isThrottled = true
                health.lastThrottled = now
                health.heldUntil = max(health.heldUntil, now + hold)
            }
        }
        switch failure.code {
        case .auth:
            stop(because: failure)
            return nil
        case .invalidToken where failure.wasNotSent:
            return nil
        case .invalidToken:
            let tooMany = health.withLock { health in
                if failure.confirmsConfiguration {
                    health.isConfirmed = true
                    health.refusalsInARow = 0
                }
                guard !health.isConfirmed else { return false }
                health.refusalsInARow += 1
                return health.refusalsInARow >= refusalLimit
            }
            guard tooMany else { return nil }
            let stop = SinkFailure(
                .auth,
                "\(refusalLimit) device tokens in a row were refused (\(failure.detail)) and none was accepted since the sink started: "
                    + "the sink's environment, topic or project is likely wrong for these tokens"
            )
            self.stop(because: stop)
            return stop
        default:
            return nil
        }
    }

    /// The scope of a throttle that may be the sink's or `recipient`'s: the sink's once another recipient was
    /// throttled so before it, with no notification accepted in between; the recipient's otherwise (one device over
    /// its message rate leaves the others sent).
    private func scope(ofUnscopedThrottleOf recipient: String) -> ThrottleScope {
        health.withLock { health in
            defer { health.unscopedThrottleRecipient = recipient }
            let isAnother = health.unscopedThrottleRecipient.map { $0 != recipient } ?? false
            return isAnother ? .sink : .recipient
        }
    }

    /// Marks the sink stopped and answers everything it holds as abandoned.
    private func stop(because failure: SinkFailure) {
        let isFirst = health.withLock { health in
            defer { if health.stopped == nil { health.stopped = failure } }
            return health.stopped == nil
        }
        guard isFirst else { return }
        logger.error(
            "Sink stopped: the platform refused its credentials; nothing more is sent until the configuration is fixed and the pipeline restarted",
            metadata: ["sink": "\(name)", "reason": "\(failure.detail)"]
        )
        for job in queue.close() { job.completion(.abandoned(failure)) }
    }

    private func noteRetry(_ failure: SinkFailure, wait: Duration) {
        let now = clock.now()
        let report: Int? = health.withLock { health in
            health.retriesSinceLog += 1
            if let last = health.lastRetryLog, now - last < .seconds(5) { return nil }
            health.lastRetryLog = now
            defer { health.retriesSinceLog = 0 }
            return health.retriesSinceLog
        }
        if let report {
            logger.warning(
                "Sink attempts failed and are retried",
                metadata: ["sink": "\(name)", "retries": "\(report)", "lastReason": "\(failure)", "pending": "\(queue.count)"]
            )
        }
    }
}
