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

    /// The wire bytes and the size the platform's payload limit applies to (the FCM `data`
    /// object, or the whole APNs payload), encoded once.
    func encodedWithLimitedSize() -> (bytes: [UInt8], limitedSize: Int) {
        switch self {
        case .fcm(let message):
            let (bytes, dataSize) = message.encodedWithDataSize()
            return (bytes, dataSize)
        case .apns(let notification):
            let bytes = notification.encoded()
            return (bytes, bytes.count)
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
