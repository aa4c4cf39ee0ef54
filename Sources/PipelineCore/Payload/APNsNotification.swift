/// An HTTP request header (name and value).
public struct Header: Sendable, Hashable {
    /// The header name, lower case.
    public var name: String
    /// The header value.
    public var value: String

    /// Creates a header.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// An APNs notification: the JSON payload, the device token and the provider API request headers.
public struct APNsNotification: Sendable, Equatable {
    /// The device token (goes in the request path `/3/device/{token}`).
    public var token: String
    /// The JSON payload (`{"aps":{…},"adb_template_type":…,…}`), keys in output order.
    public var payload: JSONObject
    /// `apns-priority`: 10 (high) or 5 (normal); omitted when `nil`.
    public var priority: DeliveryPriority?
    /// `apns-expiration`, epoch seconds; omitted when `nil`.
    public var expiration: Int64?
    /// `apns-collapse-id`; omitted when `nil`.
    public var collapseId: String?

    /// Creates a notification.
    public init(token: String, payload: JSONObject, priority: DeliveryPriority? = nil, expiration: Int64? = nil, collapseId: String? = nil) {
        self.token = token
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
    }

    /// The request headers in a fixed order: `apns-push-type` (always `alert`), then
    /// `apns-priority`, `apns-expiration`, `apns-collapse-id` when set.
    public var headers: [Header] {
        Self.headers(priority: priority, expiration: expiration, collapseId: collapseId)
    }

    /// ``headers`` for these options.
    static func headers(priority: DeliveryPriority?, expiration: Int64?, collapseId: String?) -> [Header] {
        var headers: [Header] = []
        headers.reserveCapacity(4)
        forEachHeader(priority: priority, expiration: expiration, collapseId: collapseId) { headers.append(Header($0, $1)) }
        return headers
    }

    /// Calls `body` with the name and value of each of ``headers`` for these options, in order.
    static func forEachHeader(priority: DeliveryPriority?, expiration: Int64?, collapseId: String?, _ body: (String, String) -> Void) {
        body("apns-push-type", "alert")
        if let priority { body("apns-priority", priority == .high ? "10" : "5") }
        if let expiration { body("apns-expiration", String(expiration)) }
        if let collapseId { body("apns-collapse-id", collapseId) }
    }

    /// The payload's bytes, exactly as sent (this is what the 4096-byte limit applies to).
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(object: payload)
        return writer.bytes
    }
}
