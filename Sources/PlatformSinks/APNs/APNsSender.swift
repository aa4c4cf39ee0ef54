import Foundation
import NIOHTTP1
public import Logging
public import PipelineCore
public import PushSinks

/// Sends rendered APNs payloads to the APNs provider API over HTTP/2: `POST {baseURL}/3/device/{token}` with the
/// payload as it is, `authorization: bearer <ES256 provider token>`, `apns-topic`, `apns-id` (the message id),
/// and the rendered request headers (`apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id`).
/// Wrap it in a ``RetryingSink`` (see ``makeSink(_:environment:retry:logger:)``).
public struct APNsSender: PlatformSender {
    public var kind: String { "apns" }
    public let name: String
    private let baseURL: String
    private let topic: String
    private let http: SinkHTTPClient
    private let providerToken: APNsProviderToken

    /// Reads the key and prepares the client; nothing is sent yet.
    ///
    /// - Throws: ``SinkConfigurationError`` naming the setting that cannot be used.
    public init(_ configuration: APNsSinkConfiguration, environment: [String: String]) throws(SinkConfigurationError) {
        for (key, value) in [("apns.keyId", configuration.keyID), ("apns.teamId", configuration.teamID), ("apns.topic", configuration.topic)] where value.isEmpty {
            throw SinkConfigurationError(key: key, reason: "required")
        }
        guard let source = configuration.privateKey else {
            throw SinkConfigurationError(key: "apns.privateKeyFile", reason: "required: the .p8 auth key (or apns.privateKeyEnv)")
        }
        let pem = try source.read(environment: environment, key: "apns.privateKey")
        self.providerToken = try APNsProviderToken(
            p8: pem,
            keyID: configuration.keyID,
            teamID: configuration.teamID,
            refreshMinutes: configuration.tokenRefreshMinutes,
            configurationKey: "apns.privateKey (\(source))"
        )
        let base = configuration.effectiveBaseURL
        self.baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        self.topic = configuration.topic
        self.name = "apns:\(configuration.baseURL == nil ? configuration.environment.rawValue : self.baseURL)"
        self.http = try SinkHTTPClient(connection: configuration.connection, concurrency: configuration.concurrency, configurationKey: "apns")
    }

    /// The sink the pipeline uses: this sender behind a ``RetryingSink``.
    public static func makeSink(
        _ configuration: APNsSinkConfiguration,
        environment: [String: String],
        retry: RetryPolicy,
        logger: Logger
    ) throws(SinkConfigurationError) -> RetryingSink<APNsSender> {
        RetryingSink(sender: try APNsSender(configuration, environment: environment), concurrency: configuration.concurrency, policy: retry, logger: logger)
    }

    public func attempt(_ notification: RenderedNotification) async -> SinkFailure? {
        let token = notification.token
        guard Self.isPathSafe(token) else {
            return SinkFailure(.invalidToken, "not an APNs device token (expected letters and digits only): \(token.prefix(80))", wasNotSent: true)
        }
        let bearer: String
        do {
            bearer = try providerToken.token()
        } catch {
            return SinkFailure(.auth, "signing the provider token failed: \(error)")
        }
        var headers: [(String, String)] = [
            ("authorization", "bearer \(bearer)"),
            ("apns-topic", topic),
            ("apns-id", notification.messageId),
            ("content-type", "application/json"),
        ]
        for header in notification.headers { headers.append((header.name, header.value)) }
        let url = "\(baseURL)/3/device/\(token)"
        let reply: HTTPReply
        do {
            reply = try await http.send(.POST, url, headers: headers, body: notification.payloadBytes)
        } catch {
            // Named without the device token: the detail goes to logs and analytics records.
            return SinkHTTPClient.unavailable(error, url: "\(baseURL)/3/device/…")
        }
        if reply.status == 200 { return nil }
        let failure = Self.classify(reply)
        if failure.code == .auth, reply.jsonObject?["reason"]?.stringValue == "ExpiredProviderToken", providerToken.expire(bearer) {
            return SinkFailure(.unavailable, "\(failure.detail); a new provider token is made and the message retried")
        }
        return failure
    }

    /// Whether a token can go into the request path as it is (device tokens are hexadecimal).
    static func isPathSafe(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 200
            && token.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default:
                    false
                }
            }
    }

    public func shutdown() async {
        await http.shutdown()
    }

    /// The outcome taxonomy for an APNs error answer (`{"reason": "...", "timestamp": <ms>}`).
    static func classify(_ reply: HTTPReply) -> SinkFailure {
        let object = reply.jsonObject
        let reason = object?["reason"]?.stringValue ?? "HTTP \(reply.status)"
        let detail = "APNs \(reply.status) \(reason)"
        switch (reply.status, reason) {
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return SinkFailure(.invalidToken, detail)
        case (400, "BadTopic"), (400, "MissingTopic"), (400, "TopicDisallowed"):
            // The sink's apns-topic is wrong for every message: stop rather than fail the whole backlog.
            return SinkFailure(.auth, "\(detail) (check apns.topic)")
        case (410, _):
            let invalidatedAt = object?["timestamp"]?.integerValue.map { milliseconds in
                Timestamp(secondsSince1970: Int64(milliseconds / 1000), nanoseconds: Int32(milliseconds % 1000) * 1_000_000)
            }
            // Unregistered: the token was valid for this topic and environment, which this shows right.
            return SinkFailure(.invalidToken, detail, tokenInvalidatedAt: invalidatedAt, confirmsConfiguration: true)
        case (413, _):
            return SinkFailure(.payloadTooLarge, detail)
        case (401, _), (403, _):
            return SinkFailure(.auth, detail)
        case (429, "TooManyProviderTokenUpdates"):
            // The provider token, which every request carries, was replaced too often: the whole sink waits.
            return SinkFailure(.throttled, detail, retryAfter: reply.retryAfter())
        case (429, _):
            // TooManyRequests: too many notifications to this one device token.
            return SinkFailure(.throttled, detail, retryAfter: reply.retryAfter(), throttleScope: .recipient)
        case (500..., _), (400, "IdleTimeout"):
            // IdleTimeout: the connection was idle too long, not a fault of the request; retried (APNs closes that
            // connection, so the retry goes on a new one; found by review: it failed the message for good).
            return SinkFailure(.unavailable, detail, retryAfter: reply.retryAfter())
        case (400..<500, _):
            return SinkFailure(.rejectedByPlatform, detail)
        default:
            return SinkFailure(.unavailable, "APNs answered an unexpected \(reply.unexpectedStatus(configurationKey: "apns.baseUrl"))")
        }
    }
}
