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
