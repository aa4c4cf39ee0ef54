@testable import PipelineCore
import TestSupport
import Testing

@Suite("JSON fuzzing (seeded)")
struct JSONFuzzTests {
    static func randomString(_ rng: inout SeededGenerator) -> String {
        let pieces = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1F}", "é", "😀", "中", "{{", "}", "\u{7F}", "\u{2028}"]
        return (0..<Int.random(in: 0...8, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
    }

    static func randomValue(_ rng: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0...(depth > 4 ? 4 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int.random(in: Int.min...Int.max, using: &rng) >> Int.random(in: 0...63, using: &rng))
        case 3: return .double(Double(Int32.random(in: .min ... .max, using: &rng)) / 64)
        case 4: return .string(randomString(&rng))
        case 5: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                object[randomString(&rng)] = randomValue(&rng, depth: depth + 1)
            }
            return .object(object)
        }
    }

    @Test func writerOutputAlwaysParsesBackToTheSameValue() throws {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<3_000 {
            let value = Self.randomValue(&rng)
            let bytes = value.encoded()
            let parsed = try JSONValue(parsing: bytes)
            #expect(parsed == value)
            #expect(parsed.encoded() == bytes, "writing is deterministic and order-preserving")
        }
    }

    @Test func randomAndTruncatedBytesNeverCrashTheParser() {
        var rng = SeededGenerator(seed: 0x5EED_0002)
        let alphabet = Array(#"{}[]":,\-+.eE0123456789 tfnrul"aé"#.utf8) + [0x00, 0x0A, 0xFF, 0xC3, 0xED, 0xA0]
        var failures = 0
        for index in 0..<5_000 {
            var bytes: [UInt8]
            if index % 2 == 0 {
                bytes = Self.randomValue(&rng).encoded()
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            } else {
                bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng) ?? 0 }
            }
            do throws(JSONParseError) {
                _ = try JSONValue(parsing: bytes)
            } catch {
                failures += 1
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
        #expect(failures > 1_000, "the fuzzer must actually produce invalid input")
    }
}
