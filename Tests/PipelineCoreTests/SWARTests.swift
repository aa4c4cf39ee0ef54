@testable import PipelineCore
import TestSupport
import Testing

@Suite("Eight-byte scans of string bytes (SWAR)")
struct SWARTests {
    /// The byte-by-byte definition the word test must agree with.
    static func isSpecial(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20
    }

    static func word(_ bytes: [UInt8]) -> UInt64 {
        SWAR.load(bytes.span, at: 0)
    }

    /// Eight bytes: on even rounds mostly neighbours of the special values and bytes with the high bit set (which
    /// borrow in the arithmetic) with a special byte about one time in `oneIn`; on odd rounds any bytes.
    static func randomWord(round: Int, oneIn: Int, _ rng: inout SeededGenerator) -> [UInt8] {
        let plain: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF, UInt8(ascii: "a")]
        let special: [UInt8] = [0x00, 0x01, 0x0A, 0x1F, UInt8(ascii: "\""), UInt8(ascii: "\\")]
        return (0..<8).map { _ in
            guard round % 2 == 0 else { return UInt8.random(in: 0...255, using: &rng) }
            return Int.random(in: 0..<oneIn, using: &rng) == 0 ? special.randomElement(using: &rng)! : plain.randomElement(using: &rng)!
        }
    }

    @Test("a word has a byte to escape exactly when one of its eight bytes is one, wherever it is")
    func agreesWithTheByteTest() {
        var rng = SeededGenerator(seed: 0x5A_4A12)
        for round in 0..<40_000 {
            let bytes = Self.randomWord(round: round, oneIn: 6, &rng)
            #expect((SWAR.stopBits(Self.word(bytes)) != 0) == bytes.contains(where: Self.isSpecial), "\(bytes)")
            for byte in [UInt8(ascii: "{"), UInt8(ascii: "\""), 0x80] {
                #expect(SWAR.contains(byte, in: Self.word(bytes)) == bytes.contains(byte), "\(bytes) \(byte)")
            }
            #expect(SWAR.isASCII(Self.word(bytes)) == bytes.allSatisfy { $0 < 0x80 })
        }
    }

    @Test("the first stop of a word is exactly its first byte to escape, wherever the others are")
    func plainPrefixIsExact() {
        var rng = SeededGenerator(seed: 0x5A_4A13)
        for round in 0..<40_000 {
            let bytes = Self.randomWord(round: round, oneIn: 4, &rng)
            let expected = bytes.firstIndex(where: Self.isSpecial) ?? 8
            #expect(SWAR.stopBits(Self.word(bytes)).trailingZeroBitCount >> 3 == expected, "\(bytes)")
        }
    }

    @Test("quotes and backslashes are flagged exactly, each of them; control characters are found wherever they are")
    func quoteAndBackslashBitsAreExact() {
        var rng = SeededGenerator(seed: 0x5A_4A14)
        for round in 0..<40_000 {
            let bytes = Self.randomWord(round: round, oneIn: 3, &rng)
            let bits = SWAR.quoteAndBackslashBits(Self.word(bytes))
            for (index, byte) in bytes.enumerated() {
                let flagged = bits >> (8 * UInt64(index)) & 0xFF
                #expect(flagged == (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? 0x80 : 0), "\(bytes) at \(index)")
            }
            #expect(SWAR.hasControlCharacter(Self.word(bytes)) == bytes.contains { $0 < 0x20 }, "\(bytes)")
        }
    }

    @Test("every byte value, at every position of a word, between fillers that borrow or carry, is flagged exactly")
    func quoteAndBackslashBitsForEveryByte() {
        for filler: UInt8 in [0x00, 0x01, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xFF] {
            for value in UInt8.min...UInt8.max {
                for position in 0..<8 {
                    var bytes = [UInt8](repeating: filler, count: 8)
                    bytes[position] = value
                    let bits = SWAR.quoteAndBackslashBits(Self.word(bytes))
                    let expected = bytes.enumerated().reduce(UInt64(0)) { bits, element in
                        let isOne = element.element == UInt8(ascii: "\"") || element.element == UInt8(ascii: "\\")
                        return bits | (isOne ? 0x80 << (8 * UInt64(element.offset)) : 0)
                    }
                    #expect(bits == expected, "\(bytes)")
                    #expect(SWAR.hasControlCharacter(Self.word(bytes)) == bytes.contains { $0 < 0x20 }, "\(bytes)")
                }
            }
        }
    }

    @Test("JSON text written as a string, or quoted where it was written, gives the general escaper's bytes, with quotes, backslashes and controls anywhere")
    func jsonTextAsStringMatchesTheGeneralEscaper() {
        var rng = SeededGenerator(seed: 0x5A_4A15)
        let pieces: [[UInt8]] = [
            Array(#"{"a":"b"}"#.utf8), Array(#"\""#.utf8), Array("é€😀".utf8), [UInt8(ascii: "\"")], [UInt8(ascii: "\\")],
            [0x0A], [0x01], [0x7F], Array("plain text".utf8), Array(#"[1,2,"x\\y"]"#.utf8),
        ]
        for round in 0..<5_000 {
            var text: [UInt8] = []
            let withControls = round % 4 == 0
            for _ in 0..<Int.random(in: 0...12, using: &rng) {
                var piece = pieces.randomElement(using: &rng)!
                while !withControls, piece.contains(where: { $0 < 0x20 }) { piece = pieces.randomElement(using: &rng)! }
                text += piece
            }
            var general = JSONWriter(reservingCapacity: 16)
            general.write(stringUTF8: text.span)
            var counted = JSONWriter(reservingCapacity: 16)
            counted.write(jsonTextAsString: text.span)
            #expect(counted.bytes == general.bytes, "\(String(decoding: text, as: UTF8.self).debugDescription)")
            // Quoted in place after what was written before it (bytes that stay as they are).
            var inPlace = JSONWriter(reservingCapacity: 4)
            inPlace.writeRaw(#"{"k":"#)
            inPlace.append(bytes: text)
            inPlace.quoteWrittenJSONText(from: 5)
            #expect(inPlace.bytes == Array(#"{"k":"#.utf8) + general.bytes, "\(String(decoding: text, as: UTF8.self).debugDescription)")
        }
    }

    @Test("strings with a byte to escape at every position round-trip through the writer and the parser")
    func escapesAtEveryPosition() throws {
        for special in ["\"", "\\", "\n", "\u{01}", "\u{1F}"] {
            for length in 0...24 {
                for position in 0...length {
                    let prefix = String(repeating: "a", count: position)
                    let suffix = String(repeating: "é", count: (length - position) / 2)
                    for text in [prefix + special + suffix, suffix + special + prefix, prefix + suffix] {
                        let encoded = JSONValue.string(text).encoded()
                        #expect(try JSONValue(parsing: encoded) == .string(text), "\(text.debugDescription)")
                    }
                }
            }
        }
    }
}
