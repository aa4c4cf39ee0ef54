/// Eight bytes at a time in a `UInt64` ("SIMD within a register"), for the scans of string bytes in the JSON
/// reader and writer and in personalization: most strings have nothing to escape and no placeholder, and testing
/// a word takes a few instructions instead of eight comparisons. Safe Swift: the word is assembled from an
/// eight-byte, bounds-checked `Span` slice.
enum SWAR {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The eight bytes at `index` (the caller checks `index + 8 <= span.count`), the first in the lowest byte.
    @inline(__always)
    static func load(_ span: Span<UInt8>, at index: Int) -> UInt64 {
        let chunk = span.extracting(index..<index + 8)
        return UInt64(chunk[0]) | UInt64(chunk[1]) << 8 | UInt64(chunk[2]) << 16 | UInt64(chunk[3]) << 24
            | UInt64(chunk[4]) << 32 | UInt64(chunk[5]) << 40 | UInt64(chunk[6]) << 48 | UInt64(chunk[7]) << 56
    }

    /// The high bit of each byte of `word` that is a `"`, `\` or control character: exact for the first such byte
    /// (a match's borrow can only flag bytes after it, never one before), 0 when there is none. So the bytes before
    /// the first are `stopBits(word).trailingZeroBitCount >> 3` (8 when there is none).
    @inline(__always)
    static func stopBits(_ word: UInt64) -> UInt64 {
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let stops = (quotes &- ones) & ~quotes | (backslashes &- ones) & ~backslashes | (word &- ones &* 0x20) & ~word
        return stops & highBits
    }

    /// The high bit of each byte of `word` that is a `"` or `\`, and of no other: exact for every byte (no carry
    /// crosses a byte, see ``zeroBytes(_:)``), so its `nonzeroBitCount` is how many there are.
    @inline(__always)
    static func quoteAndBackslashBits(_ word: UInt64) -> UInt64 {
        zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C))
    }

    /// Whether one of the eight bytes of `word` is a control character (below 0x20).
    @inline(__always)
    static func hasControlCharacter(_ word: UInt64) -> Bool {
        zeroBytes(word & (ones &* 0xE0)) != 0
    }

    /// The high bit of each byte of `word` that is 0, and of no other. The low seven bits of a byte plus 0x7F carry
    /// into its high bit unless they are all 0, and never into the next byte.
    @inline(__always)
    private static func zeroBytes(_ word: UInt64) -> UInt64 {
        let low = ones &* 0x7F
        return ~(((word & low) &+ low) | word | low)
    }

    /// Whether one of the eight bytes of `word` is `byte`.
    @inline(__always)
    static func contains(_ byte: UInt8, in word: UInt64) -> Bool {
        hasMatch(matchBits(of: byte, in: word))
    }

    /// Bits that ``hasMatch(_:)`` tests for a byte of `word` equal to `byte` ("haszero" of Sean Anderson's bit
    /// hacks, before its mask; exact for existence). Their OR over several words tells whether any has one, and a
    /// word cut short must have its later bytes cleared (so `byte` must not be 0).
    @inline(__always)
    static func matchBits(of byte: UInt8, in word: UInt64) -> UInt64 {
        let matches = word ^ (ones &* UInt64(byte))
        return (matches &- ones) & ~matches
    }

    /// Whether ``matchBits(of:in:)`` (or an OR of them) shows a match.
    @inline(__always)
    static func hasMatch(_ bits: UInt64) -> Bool {
        bits & highBits != 0
    }

    /// Whether the bytes of `word` (or of an OR of words) are all ASCII.
    @inline(__always)
    static func isASCII(_ word: UInt64) -> Bool {
        word & highBits == 0
    }
}
