public import PipelineCore

/// Where rendered notifications go: the Kafka payload topics, FCM HTTP v1, APNs, or a sink of your own.
///
/// The pipeline hands every rendered notification of a platform to each sink configured for that platform and
/// decides the message's one terminal outcome from what the sinks report. A sink must therefore report exactly one
/// ``SinkOutcome`` per submitted notification, sooner or later, and must keep one recipient's notifications in the
/// order they were submitted.
///
/// Sinks do their own retrying: ``SinkOutcome/failed(_:)`` is final (retries ran out or retrying cannot help), and a
/// sink that cannot go on at all (its credentials are refused) reports ``SinkOutcome/abandoned(_:)`` for everything it
/// holds and turns ``state`` to ``SinkState/stopped(_:)``, so the pipeline stops instead of failing the whole backlog.
public protocol PushSink: Sendable {
    /// The name the configuration routes by: `kafka`, `fcm`, `apns`.
    var kind: String { get }

    /// The name written to analytics (`sink`) and logs, e.g. `kafka:push.fcm`, `fcm:my-project`, `apns:production`.
    var name: String { get }

    /// Whether the sink is sending normally, held back by the platform, or stopped for good.
    var state: SinkState { get }

    /// Whether ``state`` can ever be ``SinkState/throttled``. The pipeline counts, per partition, the deliveries
    /// waiting on each sink that can, to pause those partitions while it is throttled; a sink that cannot is not
    /// counted (two locked updates per notification fewer). `true` unless the sink says otherwise.
    var canBeThrottled: Bool { get }

    /// Runs the sink's workers until the task is cancelled. The pipeline runs it for as long as it runs.
    func run() async

    /// Hands over one notification. Returns once the sink has taken it (it may wait briefly while a local queue is
    /// full, which slows the caller down); the outcome arrives later through `completion`, exactly once.
    ///
    /// - Parameters:
    ///   - notification: what to send.
    ///   - isCancelled: asked before each attempt; `true` means the notification is withdrawn (its partition moved to
    ///     another instance, which sends it instead), and the sink answers ``SinkOutcome/abandoned(_:)`` without
    ///     sending.
    ///   - completion: receives the outcome.
    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async

    /// Releases the sink's connections. Called once when the sink is not going to run (or has run); a sink whose
    /// ``run()`` ended releases them itself.
    func shutdown() async
}

extension PushSink {
    /// Hands over a notification that is never withdrawn.
    public func submit(_ notification: RenderedNotification, completion: @escaping @Sendable (SinkOutcome) -> Void) async {
        await submit(notification, isCancelled: { false }, completion: completion)
    }

    /// A sink without workers of its own.
    public func run() async {}

    /// A sink without connections of its own.
    public func shutdown() async {}

    /// A sink that is never throttled or stopped.
    public var state: SinkState { .ready }

    /// A sink that may be throttled (the safe answer for a sink that does not say).
    public var canBeThrottled: Bool { true }
}

/// How a sink is doing.
public enum SinkState: Sendable, Equatable {
    /// Sending normally.
    case ready
    /// The platform asked it to slow down (HTTP 429); notifications wait for it.
    case throttled
    /// It cannot send at all (its credentials were refused); nothing more will be sent until it is restarted.
    case stopped(SinkFailure)
}

/// What happened to one notification handed to a sink.
public enum SinkOutcome: Sendable, Equatable {
    /// The platform accepted it (Kafka acknowledgement, FCM 200, APNs 200).
    case delivered(attempts: Int)
    /// It will not be delivered: refused for good, or retries ran out. Final.
    case failed(SinkFailure)
    /// Not sent: its `expiresAt` passed before an attempt could be made (waiting for a retry, or behind a backlog),
    /// and a request processed after it is not delivered. Final; `detail` says when.
    case expired(detail: String)
    /// Not sent and not an outcome of the message: the sink stopped (see ``SinkState/stopped(_:)``), the
    /// notification was withdrawn, or the sink is shutting down. The pipeline leaves the event uncommitted, so it is
    /// processed again (after a restart, or by the partition's new owner).
    case abandoned(SinkFailure)
}

/// Why a sink did not deliver a notification, in one taxonomy for every platform (the analytics `reason.code`).
public struct SinkFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason codes.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The device token is unknown, expired or not for this app: stop sending to it.
        case invalidToken = "invalid_token"
        /// The payload is over the platform's size limit.
        case payloadTooLarge = "payload_too_large"
        /// The platform refused the request for another reason (other 4xx); retrying cannot help.
        case rejectedByPlatform = "rejected_by_platform"
        /// The platform asked to slow down (429); retried.
        case throttled
        /// The platform could not be reached or failed (5xx, timeouts, lost connections); retried.
        case unavailable
        /// The sink's credentials were refused (401/403, a bad key): the sink stops.
        case auth
    }

    /// The reason code.
    public var code: Code
    /// What the platform said, for people.
    public var detail: String
    /// How long the platform asked to wait before the next attempt (`Retry-After`).
    public var retryAfter: Duration?
    /// For ``Code/invalidToken``: the instant the platform says the token stopped being valid, when it says so
    /// (APNs' `timestamp`).
    public var tokenInvalidatedAt: Timestamp?
    /// How many attempts were made in all, once the failure is final.
    public var attempts: Int
    /// For ``Code/throttled``: whose limit was reached (``ThrottleScope``); ``ThrottleScope/sink`` for any other code.
    public var throttleScope: ThrottleScope
    /// For ``Code/invalidToken``: the answer shows that the sink's environment, topic and project are right: the
    /// token was known to them and is no longer registered (APNs 410 `Unregistered`, FCM `UNREGISTERED`). A wrong
    /// configuration makes every token look bad in other words (`BadDeviceToken`, `DeviceTokenNotForTopic`,
    /// `SENDER_ID_MISMATCH`); only those count towards ``RetryingSink/refusalLimit``.
    public var confirmsConfiguration: Bool
    /// The sender refused the notification itself, without sending it (a device token no platform could accept,
    /// such as an FCM token routed to APNs): the answer says nothing of the sink's configuration, so it neither counts
    /// towards ``RetryingSink/refusalLimit`` nor resets that count.
    public var wasNotSent: Bool

    /// Creates a failure.
    public init(
        _ code: Code,
        _ detail: String,
        retryAfter: Duration? = nil,
        tokenInvalidatedAt: Timestamp? = nil,
        attempts: Int = 1,
        throttleScope: ThrottleScope = .sink,
        confirmsConfiguration: Bool = false,
        wasNotSent: Bool = false
    ) {
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
        self.tokenInvalidatedAt = tokenInvalidatedAt
        self.attempts = attempts
        self.throttleScope = throttleScope
        self.confirmsConfiguration = confirmsConfiguration
        self.wasNotSent = wasNotSent
    }

    /// Whether another attempt may succeed.
    public var isRetryable: Bool { code == .throttled || code == .unavailable }

    public var description: String { "\(code.rawValue): \(detail)" }
}

/// Whose limit a ``SinkFailure/Code/throttled`` answer reports, which decides what waits for it.
public enum ThrottleScope: Sendable, Hashable {
    /// The whole sink's (a project's or an app's quota): every attempt of the sink waits
    /// (``RetryPolicy/sinkWideHold(after:)``).
    case sink
    /// This recipient's device only (APNs' 429 `TooManyRequests` is per device token): only this recipient's
    /// notifications wait.
    case recipient
    /// Either: the platform gives the same answer for a limit on the whole sink and for a limit on this recipient's
    /// device (FCM's 429 `QUOTA_EXCEEDED`: the project's quota, or one device's message rate). ``RetryingSink`` takes
    /// it as ``recipient`` until another recipient is throttled so with no notification accepted in between, and
    /// that one as ``sink``.
    case sinkOrRecipient
}
