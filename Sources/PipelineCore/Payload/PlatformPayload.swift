/// A complete payload for one platform.
public enum PlatformPayload: Sendable, Equatable {
    /// An FCM HTTP v1 request body.
    case fcm(FCMMessage)
    /// An APNs payload with token and headers.
    case apns(APNsNotification)

    /// The platform.
    public var platform: Platform {
        switch self {
        case .fcm: .fcm
        case .apns: .apns
        }
    }

    /// What goes on the wire: the FCM request body or the APNs JSON payload.
    public var jsonValue: JSONValue {
        switch self {
        case .fcm(let message): message.jsonValue
        case .apns(let notification): .object(notification.payload)
        }
    }

    /// The wire bytes of ``jsonValue``.
    public func encoded() -> [UInt8] {
        switch self {
        case .fcm(let message): message.encoded()
        case .apns(let notification): notification.encoded()
        }
    }

    /// The request headers (APNs); empty for FCM.
    public var headers: [Header] {
        switch self {
        case .fcm: []
        case .apns(let notification): notification.headers
        }
    }

    /// The device token.
    public var token: String {
        switch self {
        case .fcm(let message): message.token
        case .apns(let notification): notification.token
        }
    }
}

extension PlatformPayload {
    /// The payload whose wire bytes are `bytes` (an FCM request body, or an APNs payload whose request headers are
    /// `headers`), as the registry wrote them.
    init(decoding bytes: [UInt8], platform: Platform, token: String, headers: [Header]) {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue(parsing: bytes)
        } catch {
            preconditionFailure("a payload the registry wrote does not parse: \(error)")
        }
        switch platform {
        case .fcm:
            let message = value.objectValue?["message"]?.objectValue ?? JSONObject()
            let android = message["android"]?.objectValue ?? JSONObject()
            self = .fcm(
                FCMMessage(
                    token: token,
                    collapseKey: android["collapse_key"]?.stringValue,
                    priority: android["priority"]?.stringValue.flatMap(DeliveryPriority.init(rawValue:)),
                    ttlSeconds: android["ttl"]?.stringValue.flatMap { Int64($0.dropLast()) },
                    data: message["data"]?.objectValue ?? JSONObject()
                )
            )
        case .apns:
            func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
            self = .apns(
                APNsNotification(
                    token: token,
                    payload: value.objectValue ?? JSONObject(),
                    priority: header("apns-priority").map { $0 == "10" ? .high : .normal },
                    expiration: header("apns-expiration").flatMap { Int64($0) },
                    collapseId: header("apns-collapse-id")
                )
            )
        }
    }
}
