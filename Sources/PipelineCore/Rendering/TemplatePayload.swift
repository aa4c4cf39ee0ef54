/// What a template renders: the template's own part of a platform payload, as ``PayloadObject``s (written as bytes
/// as they are set).
///
/// The registry completes it into the wire payload: it adds the device token, the delivery options
/// (FCM `android` block, APNs headers) and the event's `custom` keys, and on APNs it sets
/// `aps.category = "AEPNotification"` and `aps.mutable-content = 1`.
public enum TemplatePayload: Sendable, Equatable {
    /// FCM: the members of `message.data`; every value must be a string.
    case fcm(data: PayloadObject)
    /// APNs: the `aps` dictionary (typically `alert`, `sound`, `badge`, `thread-id`) and the
    /// top-level keys (`adb_*`).
    case apns(aps: PayloadObject, fields: PayloadObject)
}
