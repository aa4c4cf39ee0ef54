/// The keys FCM refuses in a message's `data`: `from`, `message_type`, and any key that starts with `google` or
/// `gcm`. FCM refuses the whole message when `data` has one, so an event's `custom` key of these is refused at
/// decoding, and a template that writes one fails the event as a defect of the plugin.
enum FCMDataKey {
    /// What the refusal says, after the key.
    static let rule = #"a data key must not be "from", "message_type", or start with "google" or "gcm""#

    /// Whether FCM refuses `key` in `data`. Compared by UTF-8 bytes, as FCM compares: `"gcm\u{301}"` starts with
    /// `gcm` though its last `Character` is not `m`.
    static func isRefused(_ key: String) -> Bool {
        isRefused(utf8: key.utf8.span)
    }

    /// ``isRefused(_:)`` of a key's UTF-8 bytes, compared without a `String` made for them.
    static func isRefused(utf8 key: Span<UInt8>) -> Bool {
        key.isASCII("from") || key.isASCII("message_type") || key.hasASCIIPrefix("google") || key.hasASCIIPrefix("gcm")
    }
}

extension Span<UInt8> {
    /// Whether these bytes are the ASCII text `text` (byte for byte).
    func isASCII(_ text: String) -> Bool {
        count == text.utf8.count && hasASCIIPrefix(text)
    }

    /// Whether these bytes start with the ASCII text `prefix` (byte for byte, whatever follows it).
    func hasASCIIPrefix(_ prefix: String) -> Bool {
        let utf8 = prefix.utf8.span
        guard count >= utf8.count else { return false }
        var index = 0
        while index < utf8.count {
            if self[index] != utf8[index] { return false }
            index &+= 1
        }
        return true
    }
}
