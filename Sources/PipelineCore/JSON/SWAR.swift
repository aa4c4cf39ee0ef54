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

    /// Whether any byte of `word` is `"`, `\` or a control character (below 0x20): the bytes that end a run of
    /// plain string bytes in JSON and that the writer escapes. Exact: `false` means none of the eight is one.
    @inline(__always)
    static func hasStringSpecial(_ word: UInt64) -> Bool {
        hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C)) || hasByteBelow0x20(word)
    }

    /// The number of bytes of `word`, from the first, before its first `"`, `\` or control character (8 when there
    /// is none). Exact: a match's borrow can only flag bytes after it, never one before.
    @inline(__always)
    static func plainPrefixLength(_ word: UInt64) -> Int {
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let mask =
            ((quotes &- ones) & ~quotes | (backslashes &- ones) & ~backslashes | (word &- ones &* 0x20) & ~word) & highBits
        return mask.trailingZeroBitCount >> 3
    }

    /// Whether one of the eight bytes of `word` is `byte`.
    @inline(__always)
    static func contains(_ byte: UInt8, in word: UInt64) -> Bool {
        hasZeroByte(word ^ (ones &* UInt64(byte)))
    }

    /// Bits whose OR over words is tested by ``hasBrace(_:)``: whether a word has a `{` (a word cut short at the end
    /// of a run must have its later bytes cleared, which cannot be `{`).
    @inline(__always)
    static func braceBits(_ word: UInt64) -> UInt64 {
        let braces = word ^ (ones &* 0x7B)
        return (braces &- ones) & ~braces
    }

    /// Whether the OR of ``braceBits(_:)`` of some words shows a `{` in one of them.
    @inline(__always)
    static func hasBrace(_ bits: UInt64) -> Bool {
        bits & highBits != 0
    }

    /// The OR of the eight bytes of `word` (below 0x80 when all are ASCII).
    @inline(__always)
    static func orOfBytes(_ word: UInt64) -> UInt8 {
        var folded = word | (word >> 32)
        folded |= folded >> 16
        folded |= folded >> 8
        return UInt8(truncatingIfNeeded: folded)
    }

    /// Whether a byte of `word` is zero ("haszero" of Sean Anderson's bit hacks; exact for existence).
    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highBits != 0
    }

    /// Whether a byte of `word` is below 0x20 ("hasless(word, 0x20)"; exact for existence, n ≤ 128).
    @inline(__always)
    private static func hasByteBelow0x20(_ word: UInt64) -> Bool {
        (word &- ones &* 0x20) & ~word & highBits != 0
    }
}
