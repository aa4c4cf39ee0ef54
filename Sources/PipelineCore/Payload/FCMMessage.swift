/// The FCM HTTP v1 request body: `{"message":{"token":…,"android":{…},"data":{…}}}`.
///
/// ``encoded()`` writes keys in a fixed order (`token`, `android` with `collapse_key`, `priority`,
/// `ttl`, then `data` in its own order) and omits absent ones, so the same message always encodes
/// to the same bytes.
public struct FCMMessage: Sendable, Equatable {
    /// The device registration token.
    public var token: String
    /// `android.collapse_key`.
    public var collapseKey: String?
    /// `android.priority` (`high`/`normal`).
    public var priority: DeliveryPriority?
    /// `android.ttl`, whole seconds, written as a duration string (`"3600s"`).
    public var ttlSeconds: Int64?
    /// `message.data`: string values only.
    public var data: JSONObject

    /// Creates a message.
    public init(token: String, collapseKey: String? = nil, priority: DeliveryPriority? = nil, ttlSeconds: Int64? = nil, data: JSONObject) {
        self.token = token
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.data = data
    }

    /// The `android` object (empty when no option is set).
    public var android: JSONObject {
        var android = JSONObject()
        android.reserveCapacity(3)
        android.set("collapse_key", collapseKey)
        android.set("priority", priority?.rawValue)
        android.set("ttl", ttlSeconds.map { "\($0)s" })
        return android
    }

    /// The whole request body as a JSON value.
    public var jsonValue: JSONValue {
        var message = JSONObject()
        message["token"] = .string(token)
        let android = android
        if !android.isEmpty { message["android"] = .object(android) }
        message["data"] = .object(data)
        return ["message": .object(message)]
    }

    /// The request body's bytes, exactly as sent (the same bytes as writing ``jsonValue``).
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 2048)
        Self.write(token: token, collapseKey: collapseKey, priority: priority, ttlSeconds: ttlSeconds, into: &writer) {
            $0.write(object: data)
        }
        return writer.bytes
    }

    /// The size the FCM payload limit applies to: the bytes of the encoded `data` object.
    public var dataSize: Int {
        var writer = JSONWriter()
        writer.write(object: data)
        return writer.bytes.count
    }

    /// The `android` block's member names, prepared once.
    private enum AndroidKeys {
        static let collapseKey = JSONWriter.Key("collapse_key")
        static let priority = JSONWriter.Key("priority")
        static let ttl = JSONWriter.Key("ttl")
    }

    /// Writes a request body: the envelope with the token and the `android` options, the `data` object written by
    /// `writeData`. Returns the size of the `data` object. The FCM wire format is written only here and by the
    /// registry (which makes the body in a template's `data` ``PayloadObject``), both through
    /// ``writePrefix(token:collapseKey:priority:ttlSeconds:into:)`` and ``suffix``.
    @discardableResult
    static func write(
        token: String,
        collapseKey: String?,
        priority: DeliveryPriority?,
        ttlSeconds: Int64?,
        into writer: inout JSONWriter,
        data writeData: (inout JSONWriter) -> Void
    ) -> Int {
        writePrefix(token: token, collapseKey: collapseKey, priority: priority, ttlSeconds: ttlSeconds, into: &writer)
        let dataStart = writer.bytes.count
        writeData(&writer)
        let dataSize = writer.bytes.count - dataStart
        writer.writeRaw(suffix)
        return dataSize
    }

    /// Writes the body up to its `data` object: the envelope with the token and the `android` options, and
    /// `"data":`.
    static func writePrefix(
        token: String,
        collapseKey: String?,
        priority: DeliveryPriority?,
        ttlSeconds: Int64?,
        into writer: inout JSONWriter
    ) {
        writer.writeRaw(#"{"message":{"token":"#)
        writer.write(string: token)
        if collapseKey != nil || priority != nil || ttlSeconds != nil {
            writer.writeRaw(#","android":"#)
            writer.beginObject()
            writer.member(AndroidKeys.collapseKey, collapseKey)
            writer.member(AndroidKeys.priority, priority?.rawValue)
            if let ttlSeconds {
                // `"3600s"`, written in place (no `String` interpolated for it).
                writer.key(AndroidKeys.ttl)
                writer.writeRaw(byte: UInt8(ascii: "\""))
                writer.write(.int(Int(ttlSeconds)))
                writer.writeRaw(#"s""#)
            }
            writer.endObject()
        }
        writer.writeRaw(#","data":"#)
    }

    /// What follows the `data` object: the ends of `message` and of the body.
    static let suffix = "}}"
}
