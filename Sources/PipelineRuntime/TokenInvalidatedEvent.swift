public import PipelineCore

/// One event on `campaign.tokens`: a platform said a device token is dead (FCM `UNREGISTERED`, APNs 410
/// `Unregistered`, `BadDeviceToken`, …), so upstream systems can stop sending to it. Keyed by the token.
public struct TokenInvalidatedEvent: Sendable, Hashable {
    /// The event type.
    public static let type = "token.invalidated"

    /// The platform of the token.
    public var platform: Platform
    /// The dead device token.
    public var token: String
    /// The recipient the token belonged to.
    public var recipientId: String
    /// The message that found out.
    public var messageId: String
    /// The input event of that message.
    public var sourceEventId: String
    /// What the platform said.
    public var detail: String
    /// When the platform says the token stopped being valid (APNs' `timestamp`), when it says so.
    public var invalidatedAt: Timestamp?
    /// When this event was written.
    public var occurredAt: Timestamp

    /// Creates an event.
    public init(
        platform: Platform,
        token: String,
        recipientId: String,
        messageId: String,
        sourceEventId: String,
        detail: String,
        invalidatedAt: Timestamp?,
        occurredAt: Timestamp
    ) {
        self.platform = platform
        self.token = token
        self.recipientId = recipientId
        self.messageId = messageId
        self.sourceEventId = sourceEventId
        self.detail = detail
        self.invalidatedAt = invalidatedAt
        self.occurredAt = occurredAt
    }

    /// The JSON written to the tokens topic, keys in a fixed order.
    public var jsonValue: JSONValue {
        var object: JSONObject = [
            "specVersion": "1",
            "type": .string(Self.type),
            "platform": .string(platform.rawValue),
            "token": .string(token),
            "recipientId": .string(recipientId),
            "messageId": .string(messageId),
            "sourceEventId": .string(sourceEventId),
            "reason": .object(["code": "invalid_token", "detail": .string(detail)]),
        ]
        object.set("invalidatedAt", invalidatedAt?.rfc3339)
        object["occurredAt"] = .string(occurredAt.truncatedToMilliseconds.rfc3339)  // as the analytics events'
        return .object(object)
    }

    /// The bytes written to the tokens topic.
    public func encoded() -> [UInt8] { jsonValue.encoded() }

    /// Reads an event back (for tests and tools).
    ///
    /// - Throws: ``PipelineError`` naming the missing or wrong key.
    public init(json bytes: [UInt8]) throws(PipelineError) {
        let object = try JSONObject(parsing: bytes)
        func string(_ key: String) throws(PipelineError) -> String {
            guard let value = object[key]?.stringValue else { throw PipelineError(.missingField, at: FieldPath(key), "required") }
            return value
        }
        guard try string("type") == Self.type else { throw PipelineError(.invalidField, at: FieldPath("type"), "expected \(Self.type)") }
        guard let platform = Platform(rawValue: try string("platform")) else {
            throw PipelineError(.invalidField, at: FieldPath("platform"), "expected fcm or apns")
        }
        let invalidatedAt = try object["invalidatedAt"]?.stringValue.map { text throws(PipelineError) in
            do { return try Timestamp(rfc3339: text) } catch { throw PipelineError(.invalidField, at: FieldPath("invalidatedAt"), "not an RFC 3339 time") }
        }
        let occurredAt: Timestamp
        do { occurredAt = try Timestamp(rfc3339: try string("occurredAt")) } catch { throw PipelineError(.invalidField, at: FieldPath("occurredAt"), "not an RFC 3339 time") }
        self.init(
            platform: platform,
            token: try string("token"),
            recipientId: try string("recipientId"),
            messageId: try string("messageId"),
            sourceEventId: try string("sourceEventId"),
            detail: object["reason"]?.objectValue?["detail"]?.stringValue ?? "",
            invalidatedAt: invalidatedAt,
            occurredAt: occurredAt
        )
    }
}
