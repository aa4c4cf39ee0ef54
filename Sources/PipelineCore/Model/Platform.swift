/// The push platform a recipient's device token belongs to.
public enum Platform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Firebase Cloud Messaging (Android).
    case fcm
    /// Apple Push Notification service (iOS).
    case apns

    public var description: String { rawValue }
}
