/// Colour values as the push SDKs read them.
public enum HexColor {
    /// Six hex digits, with any single leading `#` removed; `nil` if not exactly six hex digits.
    ///
    /// Eight-digit colours are rejected: Android reads them as `AARRGGBB`, iOS as `RRGGBBAA`.
    public static func normalize(_ text: String) -> String? {
        let digits = text.hasPrefix("#") ? text.dropFirst() : Substring(text)
        guard digits.utf8.count == 6, digits.utf8.allSatisfy(isHexDigit) else { return nil }
        return String(digits)
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
