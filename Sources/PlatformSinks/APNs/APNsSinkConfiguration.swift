import PushSinks

/// How to reach APNs with token-based (.p8) authentication.
public struct APNsSinkConfiguration: Sendable, Equatable {
    /// Apple's two endpoints.
    public enum Environment: String, Sendable, Equatable, CaseIterable {
        /// `https://api.push.apple.com`: App Store and TestFlight builds.
        case production
        /// `https://api.sandbox.push.apple.com`: development builds.
        case sandbox

        /// The endpoint's base URL.
        public var baseURL: String {
            switch self {
            case .production: "https://api.push.apple.com"
            case .sandbox: "https://api.sandbox.push.apple.com"
            }
        }
    }

    /// Which endpoint.
    public var environment: Environment = .production
    /// Overrides the environment's base URL (a proxy, or tests); requests go to `{baseURL}/3/device/{token}`.
    public var baseURL: String?
    /// The 10-character key id of the .p8 key.
    public var keyID: String
    /// The 10-character team id.
    public var teamID: String
    /// The .p8 auth key.
    public var privateKey: SecretSource?
    /// The app's bundle id (`apns-topic`).
    public var topic: String
    /// Minutes between two provider tokens, 20 to 50 (APNs refuses tokens older than an hour, and more than one
    /// new token per 20 minutes).
    public var tokenRefreshMinutes = 40
    /// The most requests in flight at once (HTTP/2 streams over shared connections).
    public var concurrency = 100
    /// TLS and timeouts.
    public var connection = HTTPSinkConnection()

    /// A configuration with every other setting at its default.
    public init(keyID: String = "", teamID: String = "", privateKey: SecretSource? = nil, topic: String = "") {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
        self.topic = topic
    }

    /// The base URL requests go to.
    public var effectiveBaseURL: String { baseURL ?? environment.baseURL }
}
