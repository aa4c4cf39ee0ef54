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

    /// Bytes that are often almost valid: encoded random values, truncated, with a byte replaced or inserted, an
    /// object whose keys may repeat, or random bytes.
    static func nearlyValidBytes(_ rng: inout SeededGenerator, _ index: Int) -> [UInt8] {
        let alphabet = Array(#"{}[]":,\-+.eE0123456789 tfnrul"aé"#.utf8) + [0x00, 0x0A, 0xFF, 0xC3, 0xED, 0xA0, 0x80]
        var bytes = randomValue(&rng).encoded()
        switch index % 5 {
        case 0:
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
        case 1 where !bytes.isEmpty:
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] = alphabet.randomElement(using: &rng) ?? 0
        case 2:
            bytes.insert(alphabet.randomElement(using: &rng) ?? 0, at: Int.random(in: 0...bytes.count, using: &rng))
        case 3:
            // Keys that may repeat, in every spelling the duplicate check must see through: escapes, canonical
            // equivalence (KELVIN SIGN and "K", precomposed and combining accents), the empty key; and objects of
            // more than 64 members.
            let keys = [#""a""#, #""\u0061""#, #""b""#, #""\u212A""#, #""K""#, "\"\u{212A}\"", #""é""#, #""e\u0301""#, #""""#, #""ab""#, #""ba""#]
            let members = (0..<Int.random(in: 1...70, using: &rng)).map { position in
                let key = Int.random(in: 0...3, using: &rng) == 0 ? (keys.randomElement(using: &rng) ?? "") : "\"k\(position)\""
                return key + ":" + String(position)
            }
            bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
        default:
            bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng) ?? 0 }
        }
        return bytes
    }

    /// Streams of nearly valid values separated by whitespace: ``JSONParser/nextValueRange()`` ends each value where
    /// ``JSONParser/nextValue()`` does, and fails with the same error.
    @Test func valueRangesOfAStreamMatchTheTreeParser() throws {
        var rng = SeededGenerator(seed: 0x5EED_0004)
        var ranges = 0
        var failures = 0
        for index in 0..<5_000 {
            var bytes: [UInt8] = []
            for part in 0..<Int.random(in: 1...3, using: &rng) {
                bytes += Self.nearlyValidBytes(&rng, index + part)
                bytes += Array([" ", "\n", " \n\t"].randomElement(using: &rng)?.utf8 ?? "".utf8)
            }
            var tree = JSONParser(bytes: bytes)
            var document = JSONParser(bytes: bytes)
            while true {
                let start = tree.offset
                let value: Result<JSONValue?, JSONParseError>
                do throws(JSONParseError) { value = .success(try tree.nextValue()) } catch { value = .failure(error) }
                let range: Result<Range<Int>?, JSONParseError>
                do throws(JSONParseError) { range = .success(try document.nextValueRange()) } catch { range = .failure(error) }
                switch (value, range) {
                case (.success(nil), .success(nil)):
                    break
                case (.success(let value?), .success(let range?)):
                    ranges += 1
                    #expect(range.upperBound == tree.offset && document.offset == tree.offset, "input \(index)")
                    #expect(try JSONValue(parsing: bytes[range]) == value, "input \(index)")
                    continue
                case (.failure(let treeError), .failure(let rangeError)):
                    failures += 1
                    #expect(rangeError == treeError, "input \(index) from \(start)")
                default:
                    Issue.record("input \(index) from \(start): \(value) against \(range)")
                }
                break
            }
        }
        #expect(ranges > 1_000)
        #expect(failures > 1_000)
    }

    @Test func documentParsesExactlyAsTheTreeParser() {
        var rng = SeededGenerator(seed: 0x5EED_0003)
        var failures = 0
        var duplicates = 0
        for index in 0..<20_000 {
            let bytes = Self.nearlyValidBytes(&rng, index)
            let tree: Result<JSONValue, JSONParseError>
            do throws(JSONParseError) {
                tree = .success(try JSONValue(parsing: bytes))
            } catch {
                tree = .failure(error)
            }
            let document: Result<JSONDocument, JSONParseError>
            do throws(JSONParseError) {
                document = .success(try JSONDocument(parsing: bytes))
            } catch {
                document = .failure(error)
            }
            switch (tree, document) {
            case (.success(let value), .success(let document)):
                // The same values, in the same member order (equality ignores order; the encoding does not).
                #expect(document.value == value, "input \(index)")
                #expect(document.value.encoded() == value.encoded(), "input \(index)")
                // A string with a `{` is never marked as having none (personalization skips those); one without
                // escapes and without a `{` is (or the skip never happens).
                for node in document.nodes.indices where document.kind(at: node) == .string {
                    let hasBrace = document.string(at: node).contains("{")
                    let isEscaped = document.nodes[node].flags & JSONDocument.escaped != 0
                    #expect(document.mayHaveBrace(at: node) == (hasBrace || isEscaped), "input \(index), node \(node)")
                }
            case (.failure(let treeError), .failure(let documentError)):
                failures += 1
                if treeError.kind == .duplicateKey { duplicates += 1 }
                #expect(documentError == treeError, "input \(index): \(String(decoding: bytes, as: UTF8.self))")
            default:
                Issue.record("input \(index): the parsers disagree (\(tree), \(document)) on \(String(decoding: bytes, as: UTF8.self))")
            }
        }
        #expect(failures > 5_000, "the fuzzer must produce invalid input")
        #expect(duplicates > 500, "the fuzzer must produce duplicate keys")
    }

    /// Lookups match as `String` equality does: escapes are decoded, and non-ASCII keys are compared under canonical
    /// equivalence ("K" finds U+212A KELVIN SIGN; "e" with a combining accent finds "é").
    @Test func documentLooksUpKeysAsJSONObjectDoes() throws {
        let text = #"{"a":1,"\u0062":2,"\#u{212A}":3,"é":4,"":5,"long key with spaces":6}"#
        let document = try JSONDocument(parsing: Array(text.utf8))
        let object = try #require(document.value.objectValue)
        for key in ["a", "b", "K", "\u{212A}", "é", "e\u{301}", "", "long key with spaces", "missing", "A", "long key with space"] {
            let found = document.member(key, inObjectAt: 0).map { document.value(at: $0.value) }
            #expect(found == object[key], "key \(key)")
        }
        // A plain ASCII key found by a non-ASCII spelling.
        let kelvin = try JSONDocument(parsing: Array(#"{"x":0,"K":1}"#.utf8))
        #expect(kelvin.member("\u{212A}", inObjectAt: 0)?.position == 1)
        // An object whose keys are all plain ASCII is searched by tag (length, first and last byte): keys that share
        // a tag are told apart by their bytes.
        let tagged = try JSONDocument(parsing: Array(#"{"abc":1,"axc":2,"a":3,"":4,"K":5}"#.utf8))
        let taggedObject = try #require(tagged.value.objectValue)
        for key in ["abc", "axc", "ayc", "a", "", "K", "\u{212A}", "ab", "abcd"] {
            #expect(tagged.member(key, inObjectAt: 0).map { tagged.value(at: $0.value) } == taggedObject[key], "key \(key)")
        }
        #expect(tagged.member("axc", inObjectAt: 0)?.position == 1)
    }

    /// A flat record's string fields read in place, as `JSONObject` reads them.
    @Test func documentReadsStringFieldsOfItsRoot() throws {
        let text = #"{"id":"a\"b","n":1,"nothing":null,"nested":{"id":"inner"},"é":"accent"}"#
        let document = try JSONDocument(parsing: Array(text.utf8))
        let object = try #require(document.value.objectValue)
        for key in ["id", "n", "nothing", "nested", "é", "e\u{301}", "missing"] {
            #expect(document.string(forKey: key) == object[key]?.stringValue, "key \(key)")
        }
        #expect(document.string(forKey: "id") == "a\"b")
        #expect(try JSONDocument(parsing: Array(#"["id"]"#.utf8)).string(forKey: "id") == nil, "the root is not an object")
    }

    /// A document denser than compact events (more than one value per four bytes, or an unclosed run of `[`, a node
    /// per byte) is indexed again with room for any text, and a value too long or too dense for a stream's node
    /// buffer is read by the tree parser: the same values, ranges and errors either way.
    @Test func denseAndLongValuesAreIndexedAsTheTreeParserReadsThem() throws {
        let dense = "[" + Array(repeating: "0", count: 1_000).joined(separator: ",") + "]"
        let nested = "[" + String(repeating: "[]", count: 600) + "]"
        let long = #"{"text":""# + String(repeating: "x", count: 40_000) + #"","n":[1,2,3]}"#
        let denseObject = "{" + (0..<300).map { #""k\#($0)":\#($0 % 10)"# }.joined(separator: ",") + "}"
        let unclosed = String(repeating: "[", count: 64)  // a node per byte, then the end of the input
        let tooDeep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        for text in [dense, nested, long, denseObject, "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0", dense + "x", unclosed, tooDeep] {
            let bytes = Array(text.utf8)
            let tree: Result<JSONValue, JSONParseError>
            do throws(JSONParseError) { tree = .success(try JSONValue(parsing: bytes)) } catch { tree = .failure(error) }
            let document: Result<JSONValue, JSONParseError>
            do throws(JSONParseError) { document = .success(try JSONDocument(parsing: bytes).value) } catch { document = .failure(error) }
            #expect(document == tree, "\(text.prefix(40))")

            // In a stream, after a short value: the range ends where the tree parser's value does.
            let stream = Array(("1 " + text + " 2").utf8)
            var treeParser = JSONParser(bytes: stream)
            var rangeParser = JSONParser(bytes: stream)
            for _ in 0..<3 {
                let value: Result<JSONValue?, JSONParseError>
                do throws(JSONParseError) { value = .success(try treeParser.nextValue()) } catch { value = .failure(error) }
                let range: Result<Range<Int>?, JSONParseError>
                do throws(JSONParseError) { range = .success(try rangeParser.nextValueRange()) } catch { range = .failure(error) }
                switch (value, range) {
                case (.success(let value?), .success(let range?)):
                    #expect(range.upperBound == treeParser.offset, "\(text.prefix(40))")
                    #expect(try JSONValue(parsing: stream[range]) == value, "\(text.prefix(40))")
                case (.failure(let treeError), .failure(let rangeError)):
                    #expect(rangeError == treeError, "\(text.prefix(40))")
                default:
                    Issue.record("\(text.prefix(40)): \(value) against \(range)")
                }
                if case .failure = range { break }
            }
        }
    }

    /// Whitespace around the structural bytes, and objects nested deeper than the indexer keeps each object's filter
    /// of seen keys for (16 levels), with keys repeated after a nested container closes: the same values and errors
    /// as the tree parser, at several nesting limits.
    @Test func spacedAndDeeplyNestedTextsAreIndexedAsTheTreeParserReadsThem() {
        var rng = SeededGenerator(seed: 0x5EED_0005)
        var texts: [(bytes: [UInt8], maximumDepth: Int)] = []
        for index in 0..<4_000 {
            // Whitespace before and after the structural bytes outside strings, now and then.
            var spaced: [UInt8] = []
            var inString = false
            var escaped = false
            for byte in Self.nearlyValidBytes(&rng, index) {
                let isStructural = !inString && Array("{}[]:,".utf8).contains(byte)
                if isStructural, Bool.random(using: &rng) { spaced += Array(" \r\n\t".utf8.prefix(Int.random(in: 1...4, using: &rng))) }
                spaced.append(byte)
                if isStructural, Bool.random(using: &rng) { spaced += Array(" \n".utf8.prefix(Int.random(in: 1...2, using: &rng))) }
                if inString, !escaped, byte == UInt8(ascii: "\\") { escaped = true } else {
                    if !escaped, byte == UInt8(ascii: "\"") { inString.toggle() }
                    escaped = false
                }
            }
            texts.append((spaced, JSONParser.defaultMaximumDepth))
        }
        for depth in [15, 16, 17, 40] {
            for duplicateLevel in [-1, 0, 1, depth / 2, depth - 2, depth - 1] {
                var text = ""
                for level in 0..<depth {
                    text += #"{"k\#(level)":{"x":1},"# + (level % 2 == 0 ? #""é\#(level)":[0],"# : "") + #""v":"#
                }
                text += "[]"
                for level in (0..<depth).reversed() {
                    text += #","z":1,"\#(level == duplicateLevel ? "k" : "y")\#(level)":2}"#
                }
                for maximumDepth in [Int.max, depth, depth - 1] {
                    texts.append((Array(text.utf8), maximumDepth))
                }
            }
        }
        var failures = 0
        for (index, (bytes, maximumDepth)) in texts.enumerated() {
            let tree: Result<JSONValue, JSONParseError>
            do throws(JSONParseError) {
                tree = .success(try JSONValue(parsing: bytes, maximumDepth: maximumDepth))
            } catch {
                tree = .failure(error)
            }
            let document: Result<JSONValue, JSONParseError>
            do throws(JSONParseError) {
                document = .success(try JSONDocument(parsing: bytes, maximumDepth: maximumDepth).value)
            } catch {
                document = .failure(error)
            }
            if case .failure = tree { failures += 1 }
            #expect(document == tree, "input \(index): \(String(decoding: bytes, as: UTF8.self))")
            if case .success(let treeValue) = tree, case .success(let documentValue) = document {
                #expect(documentValue.encoded() == treeValue.encoded(), "input \(index)")
            }
        }
        #expect(failures > 1_000 && failures < texts.count - 500, "valid and invalid input (\(failures) of \(texts.count) invalid)")
    }
}
