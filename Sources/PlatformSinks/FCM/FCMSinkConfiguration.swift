import PushSinks

/// How to reach FCM HTTP v1.
public struct FCMSinkConfiguration: Sendable, Equatable {
    /// The service-account JSON key file (Firebase console → Project settings → Service accounts).
    public var serviceAccount: SecretSource?
    /// The Firebase project to send in; the key's `project_id` when `nil`.
    public var projectID: String?
    /// The FCM endpoint; requests go to `{baseURL}/v1/projects/{projectID}/messages:send`.
    public var baseURL = "https://fcm.googleapis.com"
    /// Where OAuth assertions are exchanged; the key's `token_uri` when `nil`.
    public var tokenURL: String?
    /// The most requests in flight at once.
    public var concurrency = 64
    /// TLS and timeouts.
    public var connection = HTTPSinkConnection()

    /// A configuration with every other setting at its default.
    public init(serviceAccount: SecretSource? = nil) {
        self.serviceAccount = serviceAccount
    }
}
