@testable import PipelineCore
import TestSupport
import Testing

@Suite("JSON reader and writer")
struct JSONTests {
    func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    @Test func parsesAllValueKinds() throws {
        let value = try parse(#" { "a" : [1, -2, 3.5, 1e3, true, false, null, "x"], "b": {} , "c": [] } "#)
        #expect(value == ["a": [1, -2, 3.5, 1000.0, true, false, nil, "x"], "b": [:], "c": []])
        #expect(try parse("12345678901234567890") == .double(1.2345678901234567e19), "too big for Int: a double")
        #expect(try parse("-0") == .int(0))
    }

    @Test func keepsKeyOrderAndWritesCompactly() throws {
        let text = #"{"z":1,"a":{"y":"é\u00e9","b":[true,null]},"m":-1.25}"#
        let value = try parse(text)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
        #expect(value.jsonString == #"{"z":1,"a":{"y":"éé","b":[true,null]},"m":-1.25}"#)
    }

    @Test func escapesStringsCorrectly() throws {
        let value: JSONValue = .string("q\" b\\ /\n\r\t\u{08}\u{0C}\u{01}\u{1F} 😀 ü")
        #expect(value.jsonString == #""q\" b\\ /\n\r\t\b\f\u0001\u001f 😀 ü""#)
        #expect(try parse(value.jsonString) == value)
    }

    /// The writer copies plain runs whole and skips them a word at a time: a special byte at any position, in runs
    /// shorter and longer than a word, must be escaped exactly as a byte-by-byte escaper does.
    @Test func escapesAtEveryPositionOfLongRuns() {
        func reference(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{08}": out += "\\b"
                case "\u{0C}": out += "\\f"
                case let control where control.value < 0x20:
                    out += "\\u00" + String(control.value >> 4, radix: 16) + String(control.value & 0xF, radix: 16)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        let specials = ["\"", "\\", "\n", "\u{01}", "\u{1F}", "\"\\", "é\"", "😀\n"]
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 40] {
            for position in 0...length {
                for special in specials {
                    let text = String(repeating: "a", count: position) + special + String(repeating: "b", count: length - position) + special
                    #expect(JSONValue.string(text).jsonString == reference(text), "\(length) \(position) \(special.debugDescription)")
                }
            }
        }
    }

    @Test func decodesEscapesIncludingSurrogatePairs() throws {
        #expect(try parse(#""\ud83d\ude00 \u00FC \/ \b""#) == "😀 ü / \u{08}")
    }

    /// Integers of up to 18 digits are read from the bytes, longer ones through `Int(String)`, fractions and
    /// exponents through `Double(String)`: each as `Int(text)` or `Double(text)` would read it.
    @Test func readsNumbersAsTheStandardLibraryDoes() throws {
        let nines = String(repeating: "9", count: 18)
        let texts = ["0", "-0", "7", "-7", "10", nines, "-" + nines, "1" + nines, "9223372036854775807", "-9223372036854775808",
                     "9223372036854775808", "-9223372036854775809", "12345678901234567890", "1.5", "-0.25", "1e3", "2E-2", "0.0"]
        for text in texts {
            let expected: JSONValue = Int(text).map(JSONValue.int) ?? .double(Double(text)!)
            #expect(try parse(text) == expected, "\(text)")
            #expect(try JSONDocument(parsing: Array(text.utf8)).value == expected, "\(text) in a document")
        }
    }

    @Test func writesIntegralNumbersWithoutFraction() {
        #expect(JSONValue.double(3.0).jsonString == "3")
        #expect(JSONValue.double(-0.5).jsonString == "-0.5")
        #expect(JSONValue.int(Int.max).jsonString == "9223372036854775807")
        #expect(JSONValue.double(.infinity).jsonString == "null")
    }

    @Test func equalityIgnoresKeyOrder() {
        let ab: JSONValue = ["a": 1, "b": 2]
        #expect(ab == ["b": 2, "a": 1.0])
        let a: JSONValue = ["a": 1]
        #expect(a != ab)
        let list: JSONValue = ["a": [1, 2]]
        #expect(list != ["a": [2, 1]])
    }

    static let malformed: [(String, JSONParseError.Kind, Int)] = [
        ("", .unexpectedEndOfInput, 0),
        ("{", .unexpectedEndOfInput, 1),
        (#"{"a":1,}"#, .unexpectedCharacter, 7),
        (#"{"a" 1}"#, .unexpectedCharacter, 5),
        ("[1 2]", .unexpectedCharacter, 3),
        ("01", .trailingData, 1),
        ("1.", .invalidNumber, 0),
        ("-", .unexpectedEndOfInput, 1),
        ("1e400", .invalidNumber, 0),
        (#""abc"#, .unexpectedEndOfInput, 4),
        ("\"a\u{01}\"", .controlCharacterInString, 2),
        (#""\x""#, .invalidEscape, 1),
        (#""\u12G4""#, .invalidUnicodeEscape, 5),
        (#""\ud800""#, .invalidUnicodeEscape, 1),
        (#""\udc00""#, .invalidUnicodeEscape, 1),
        (#"{"a":1,"a":2}"#, .duplicateKey, 7),
        ("tru", .unexpectedEndOfInput, 3),
        ("nul!", .unexpectedCharacter, 3),
        ("nul", .unexpectedEndOfInput, 3),
        ("{} {}", .trailingData, 2),
    ]

    @Test(arguments: 0..<malformed.count)
    func rejectsMalformedInputWithOffset(_ index: Int) {
        let (text, kind, offset) = Self.malformed[index]
        #expect(throws: JSONParseError(kind, at: offset), "\(text)") { try parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError(.invalidUTF8, at: 0)) { try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func limitsNestingDepth() throws {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError(.tooDeeplyNested, at: 64)) { try parse(deep) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try parse(ok) }
        let hostile = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: JSONParseError.self) { try parse(hostile) }
    }

    @Test func keysMatchLikeStringEquality() throws {
        // Lookups and the duplicate check skip most `String` comparisons by a tag of the key's
        // bytes; keys that are canonically equivalent but spelled differently must still match.
        let kelvin = "\u{212A}"  // KELVIN SIGN, canonically equivalent to "K"
        #expect(kelvin == "K")
        #expect(throws: JSONParseError(.duplicateKey, at: 7)) { try parse(#"{"K":1,"\#(kelvin)":2}"#) }
        #expect(throws: JSONParseError(.duplicateKey, at: 13)) { try parse(#"{"e\u0301":1,"\u00e9":2}"#) }
        let object = try #require(try parse(#"{"K":1,"ab":2,"a\u0062c":3,"":4}"#).objectValue)
        #expect(object[kelvin] == 1 && object["K"] == 1)
        #expect(object["ab"] == 2 && object["abc"] == 3 && object["ac"] == nil && object["a"] == nil)
        #expect(object[""] == 4)
        var built = JSONObject()
        built["\u{212A}"] = 1
        built["K"] = 2
        #expect(built.count == 1 && built["K"] == 2)
    }

    @Test func readsSeveralValuesFromAStream() throws {
        var parser = JSONParser(bytes: Array("{\"a\":1}\n{\"a\":2}\n  ".utf8))
        #expect(try parser.nextValue() == ["a": 1])
        #expect(try parser.nextValue() == ["a": 2])
        #expect(try parser.nextValue() == nil)
    }

    @Test func streamsObjectsMemberByMemberLikeTheTreeWriter() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("a", "x\"y")
        writer.member("skipped", nil)
        writer.key("nested")
        writer.beginObject()
        writer.key("n")
        writer.write(.int(1))
        writer.key("empty")
        writer.beginObject()
        writer.endObject()
        writer.endObject()
        writer.member("b", "z")
        writer.endObject()
        let expected: JSONValue = ["a": "x\"y", "nested": ["n": 1, "empty": .object(JSONObject())], "b": "z"]
        #expect(writer.bytes == expected.encoded())
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"a":"x\"y","nested":{"n":1,"empty":{}},"b":"z"}"#)
    }

    /// Prepared names (``JSONWriter/Key``) write exactly what names given as strings do: escaped names, values
    /// with and without escapes, `nil` values, timestamps, commas before all but the first member, nested objects.
    @Test func preparedNamesWriteWhatStringNamesWrite() {
        let names = ["a", "name with \"quotes\"", "tab\there", "é", "", "a long name of more than sixteen bytes"]
        let values: [String?] = ["x", nil, "x\"y\\z\n", "", "a value long enough to be copied a word at a time", "é😀"]
        let time = Timestamp(secondsSince1970: 1_703_462_400, nanoseconds: 5)
        var byString = JSONWriter()
        var byKey = JSONWriter()
        byString.beginObject()
        byKey.beginObject()
        for (index, name) in names.enumerated() {
            let key = JSONWriter.Key(name)
            #expect(key.name == name)
            for value in values {
                byString.member(name, value)
                byKey.member(key, value)
            }
            byString.member(name, timestamp: index.isMultiple(of: 2) ? time : nil)
            byKey.member(key, timestamp: index.isMultiple(of: 2) ? time : nil)
            byString.key(name)
            byKey.key(key)
            byString.beginObject()
            byKey.beginObject()
            byString.member(name, "inner")
            byKey.member(key, "inner")
            byString.endObject()
            byKey.endObject()
        }
        byString.endObject()
        byKey.endObject()
        #expect(String(decoding: byKey.bytes, as: UTF8.self) == String(decoding: byString.bytes, as: UTF8.self))
    }

    /// Arrays streamed element by element (nested in objects and arrays, empty ones too) give what the tree writer
    /// gives for the same values.
    @Test func streamsArraysElementByElementLikeTheTreeWriter() {
        func stream(_ value: JSONValue, into writer: inout JSONWriter) {
            switch value {
            case .array(let elements):
                writer.beginArray()
                for element in elements {
                    writer.nextElement()
                    stream(element, into: &writer)
                }
                writer.endArray()
            case .object(let object):
                writer.beginObject()
                for (key, member) in object {
                    writer.key(key)
                    stream(member, into: &writer)
                }
                writer.endObject()
            default:
                writer.write(value)
            }
        }
        var rng = SeededGenerator(seed: 0xA77A_75)
        for _ in 0..<2_000 {
            let value = JSONFuzzTests.randomValue(&rng)
            var writer = JSONWriter()
            stream(value, into: &writer)
            #expect(writer.bytes == value.encoded(), "\(value)")
        }
        var writer = JSONWriter()
        writer.beginArray()
        writer.nextElement()
        writer.beginArray()
        writer.endArray()
        writer.nextElement()
        writer.write(string: "a")
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"[[],"a"]"#)
    }
}
