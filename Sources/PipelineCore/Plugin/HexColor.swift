/// Colour values as the push SDKs read them.
public enum HexColor {
    /// Six hex digits, with any single leading `#` removed; `nil` if not exactly six hex digits.
    ///
    /// Eight-digit colours are rejected: Android reads them as `AARRGGBB`, iOS as `RRGGBBAA`.
    public static func normalize(_ text: String) -> String? {
        // Checked on the UTF-8 bytes; the text itself is returned when it has no `#` (no new string).
        guard let digits = digits(ofUTF8: text.utf8.span) else { return nil }
        return digits.lowerBound == 0 ? text : String(text.dropFirst())
    }

    /// Where ``normalize(_:)``'s six digits are in the UTF-8 text `bytes`; `nil` when it is not such a colour. For
    /// colours read in an event's bytes, with no `String` made to check them.
    static func digits(ofUTF8 bytes: Span<UInt8>) -> Range<Int>? {
        let start = bytes.count > 0 && bytes[0] == UInt8(ascii: "#") ? 1 : 0
        guard bytes.count - start == 6 else { return nil }
        for index in start..<bytes.count where !isHexDigit(bytes[index]) { return nil }
        return start..<bytes.count
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }
}
