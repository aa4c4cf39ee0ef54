/// Deterministic message ids: the same event and platform always give the same id, so a replay
/// produces the same ids and downstream systems can deduplicate.
public enum MessageID {
    /// The fixed namespace of message ids (a random UUID chosen once for this project; never change
    /// it, or replays stop matching earlier outputs): `5b0e8f3c-2d6a-4f7e-9c41-8a3d6e2b7f10`.
    public static let namespace: [UInt8] = [
        0x5B, 0x0E, 0x8F, 0x3C, 0x2D, 0x6A, 0x4F, 0x7E, 0x9C, 0x41, 0x8A, 0x3D, 0x6E, 0x2B, 0x7F, 0x10,
    ]

    /// The message id of `eventId` on `platform`: the name-based (SHA-1, version 5) UUID of
    /// `"<platform>:<eventId>"` in ``namespace``, lower case (`xxxxxxxx-xxxx-5xxx-yxxx-xxxxxxxxxxxx`).
    public static func make(eventId: String, platform: Platform) -> String {
        // Hashed as it is fed: no buffer of namespace + name is built.
        var sha = SHA1()
        sha.update(namespace.span)
        sha.update(platform.rawValue.utf8.span)
        sha.update(byte: UInt8(ascii: ":"))
        sha.update(eventId.utf8.span)
        return uuidText(sha.finalize())
    }

    /// RFC 9562 §5.5: a version 5 UUID of `name` in the 16-byte `namespace`, as lower-case text.
    static func uuidV5(namespace: [UInt8], name: [UInt8]) -> String {
        var sha = SHA1()
        sha.update(namespace.span)
        sha.update(name.span)
        return uuidText(sha.finalize())
    }

    /// The UUID text of a SHA-1 digest, with the version (5) and variant bits set.
    private static func uuidText(_ digest: InlineArray<20, UInt8>) -> String {
        var hash = digest
        hash[6] = (hash[6] & 0x0F) | 0x50
        hash[8] = (hash[8] & 0x3F) | 0x80
        // The text is built inline and copied into the `String` once (one allocation, not two).
        var text = InlineArray<36, UInt8>(repeating: UInt8(ascii: "-"))
        var position = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 { position += 1 }  // a dash
            text[position] = hexDigits[Int(hash[index] >> 4)]
            text[position + 1] = hexDigits[Int(hash[index] & 0x0F)]
            position += 2
        }
        do {
            return String(copying: try UTF8Span(validating: text.span))
        } catch {
            preconditionFailure("hex digits and dashes are ASCII")
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
