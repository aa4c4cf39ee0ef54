/// Colour values as the push SDKs read them.
public enum HexColor {
    /// Six hex digits, with any single leading `#` removed; `nil` if not exactly six hex digits.
    ///
    /// Eight-digit colours are rejected: Android reads them as `AARRGGBB`, iOS as `RRGGBBAA`.
    public static func normalize(_ text: String) -> String? {
        // Checked on the UTF-8 bytes; the text itself is returned when it has no `#` (no new string).
        let utf8 = text.utf8.span
        let start = utf8.count > 0 && utf8[0] == UInt8(ascii: "#") ? 1 : 0
        guard utf8.count - start == 6 else { return nil }
        for index in start..<utf8.count where !isHexDigit(utf8[index]) { return nil }
        return start == 0 ? text : String(text.dropFirst())
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }
}
