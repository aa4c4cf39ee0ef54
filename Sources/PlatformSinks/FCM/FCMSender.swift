import NIOHTTP1
public import Logging
public import PipelineCore
public import PushSinks

/// Sends rendered FCM requests to FCM HTTP v1: `POST {baseURL}/v1/projects/{project}/messages:send` with the
/// rendered body as it is and an OAuth 2.0 bearer token from the service account. Wrap it in a ``RetryingSink``
/// (see ``makeSink(_:environment:retry:logger:)``) for queueing, order, retries and the stop on refused credentials.
public struct FCMSender: PlatformSender {
    public var kind: String { "fcm" }
    public let name: String
    /// The project messages are sent in.
    public let projectID: String
    private let url: String
    private let http: SinkHTTPClient
    private let tokens: GoogleAccessTokens
    private let clock: CredentialClock

    /// Reads the key and prepares the client; nothing is sent yet.
    ///
    /// - Throws: ``SinkConfigurationError`` naming the setting that cannot be used.
    public init(_ configuration: FCMSinkConfiguration, environment: [String: String]) throws(SinkConfigurationError) {
        try self.init(configuration, environment: environment, clock: .system)
    }

    /// The same, with the clocks access tokens are made and timed by (tests move them).
    init(
        _ configuration: FCMSinkConfiguration,
        environment: [String: String],
        clock: CredentialClock
    ) throws(SinkConfigurationError) {
        guard let source = configuration.serviceAccount else {
            throw SinkConfigurationError(key: "fcm.serviceAccountFile", reason: "required: the service-account JSON key (or fcm.serviceAccountEnv)")
        }
        let json = try source.read(environment: environment, key: "fcm.serviceAccount")
        let key = try ServiceAccountKey(json: json, key: "fcm.serviceAccount (\(source))")
        let project = configuration.projectID ?? key.projectID
        let base = configuration.baseURL.hasSuffix("/") ? String(configuration.baseURL.dropLast()) : configuration.baseURL
        self.projectID = project
        self.name = "fcm:\(project)"
        self.url = "\(base)/v1/projects/\(project)/messages:send"
        self.http = try SinkHTTPClient(connection: configuration.connection, concurrency: configuration.concurrency, configurationKey: "fcm")
        self.tokens = GoogleAccessTokens(key: key, http: http, tokenURL: configuration.tokenURL, clock: clock)
        self.clock = clock
    }

    /// The sink the pipeline uses: this sender behind a ``RetryingSink``.
    public static func makeSink(
        _ configuration: FCMSinkConfiguration,
        environment: [String: String],
        retry: RetryPolicy,
        logger: Logger
    ) throws(SinkConfigurationError) -> RetryingSink<FCMSender> {
        RetryingSink(sender: try FCMSender(configuration, environment: environment), concurrency: configuration.concurrency, policy: retry, logger: logger)
    }

    public func attempt(_ notification: RenderedNotification) async -> SinkFailure? {
        let token: GoogleAccessTokens.AccessToken
        switch await tokens.token() {
        case .success(let value): token = value
        case .failure(let failure): return failure
        }
        let reply: HTTPReply
        do {
            reply = try await http.send(
                .POST,
                url,
                headers: [("authorization", "Bearer \(token.value)"), ("content-type", "application/json; charset=UTF-8")],
                body: notification.payloadBytes
            )
        } catch {
            return SinkHTTPClient.unavailable(error, url: url)
        }
        if reply.status == 200 { return nil }
        var failure = Self.classify(reply)
        if failure.code == .auth, reply.status == 401 {
            // An access token refused before its time (revoked, clock skew): one more try with a new one; a fresh
            // token refused too means the account itself is refused.
            await tokens.invalidate(token.value)
            if clock.age(since: token.obtainedAt) > .seconds(60) {
                failure = SinkFailure(.unavailable, "\(failure.detail); the access token is refreshed and the message retried")
            }
        }
        return failure
    }

    public func shutdown() async {
        await http.shutdown()
    }

    /// The outcome taxonomy for an FCM error answer (`{"error":{"code","message","status","details":[…]}}`).
    static func classify(_ reply: HTTPReply) -> SinkFailure {
        let error = reply.jsonObject?["error"]?.objectValue
        let details = error?["details"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let errorCode = details.lazy.compactMap { $0["errorCode"]?.stringValue }.first
        let status = error?["status"]?.stringValue
        let code = errorCode ?? status ?? "HTTP \(reply.status)"
        let message = error?["message"]?.stringValue ?? String(reply.bodyText.prefix(300))
        let violations = details.flatMap { $0["fieldViolations"]?.arrayValue?.compactMap(\.objectValue) ?? [] }
        let isAboutToken =
            violations.contains { ($0["field"]?.stringValue ?? "").contains("token") }
            || message.lowercased().contains("registration token")
        let detail = "FCM \(reply.status) \(code): \(message)"

        switch reply.status {
        case 429:
            // `QUOTA_EXCEEDED` is the answer for the project's quota and for one device's message rate alike (FCM's
            // error codes); `RetryingSink` tells them apart by whether other recipients are throttled too.
            return SinkFailure(.throttled, detail, retryAfter: reply.retryAfter(), throttleScope: .sinkOrRecipient)
        case 500...:
            return SinkFailure(.unavailable, detail, retryAfter: reply.retryAfter())
        case _ where code == "THIRD_PARTY_AUTH_ERROR":
            // The app's APNs credentials in Firebase (iOS through FCM): a problem of that app, not of our account.
            return SinkFailure(.rejectedByPlatform, detail)
        case 401:
            return SinkFailure(.auth, detail)
        case _ where code == "UNREGISTERED":
            // The token was registered with this project, which this shows right.
            return SinkFailure(.invalidToken, detail, confirmsConfiguration: true)
        case _ where code == "SENDER_ID_MISMATCH":
            return SinkFailure(.invalidToken, detail)
        case 403:
            return SinkFailure(.auth, detail)
        case 400 where code == "INVALID_ARGUMENT" && isAboutToken:
            return SinkFailure(.invalidToken, detail)
        case 400 where message.lowercased().contains("too big"):
            return SinkFailure(.payloadTooLarge, detail)
        case 404 where code == "NOT_FOUND" && isAboutToken:
            return SinkFailure(.invalidToken, detail)
        case 400..<500:
            return SinkFailure(.rejectedByPlatform, detail)
        default:
            return SinkFailure(.unavailable, "FCM answered an unexpected \(reply.unexpectedStatus(configurationKey: "fcm.baseUrl"))")
        }
    }
}
