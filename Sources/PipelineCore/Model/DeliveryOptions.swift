/// How urgently a notification is delivered.
public enum DeliveryPriority: String, Sendable, Hashable, CaseIterable {
    /// FCM `high`, APNs `apns-priority: 10`.
    case high
    /// FCM `normal`, APNs `apns-priority: 5`.
    case normal
}

/// The event's `options`: transport settings that are not part of the template content.
public struct DeliveryOptions: Sendable, Hashable {
    /// FCM `message.android.collapse_key`; APNs `apns-collapse-id` (at most 64 bytes).
    public var collapseKey: String?
    /// FCM `message.android.priority`; APNs `apns-priority`.
    public var priority: DeliveryPriority?
    /// How long the platform may hold the message: FCM `message.android.ttl` (`"3600s"`); APNs
    /// `apns-expiration` = `occurredAt` + ttl, as epoch seconds. Whole seconds.
    public var ttl: Duration?

    /// Creates options; everything defaults to absent.
    public init(collapseKey: String? = nil, priority: DeliveryPriority? = nil, ttl: Duration? = nil) {
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttl = ttl
    }
}
