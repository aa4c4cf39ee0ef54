/// Who receives a notification: the event's `recipient`.
public struct Recipient: Sendable, Hashable {
    /// The recipient's id (also the Kafka key of the outputs).
    public var id: String
    /// The platform of ``token``.
    public var platform: Platform
    /// The device token.
    public var token: String
    /// Values for `{{name}}` placeholders in content strings.
    public var attributes: [String: String]

    /// Creates a recipient.
    public init(id: String, platform: Platform, token: String, attributes: [String: String] = [:]) {
        self.id = id
        self.platform = platform
        self.token = token
        self.attributes = attributes
    }
}
