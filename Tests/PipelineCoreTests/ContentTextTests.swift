@testable import PipelineCore
import TestSupport
import Testing

@Suite("Text read as it is in the event (ContentText)")
struct ContentTextTests {
    /// A reader over `content` (one JSON object), personalizing from `name` = Ada.
    static func reader(_ content: String) throws -> FieldReader {
        let document = try JSONDocument(parsing: Array(content.utf8))
        return FieldReader(root: RenderDiagnostics(document: document, node: 0, path: FieldPath("content"), personalizer: Personalizer(attributes: ["name": "Ada"])))
    }

    /// For random strings (escapes, control characters, non-ASCII, placeholders), written raw and escaped:
    /// `text` reads what `string` reads, records the same issues, and writes the bytes `string`'s text writes.
    @Test func readsAndWritesWhatStringDoes() throws {
        var rng = SeededGenerator(seed: 0x7E_C57)
        for _ in 0..<3_000 {
            let value = JSONFuzzTests.randomString(&rng)
            // The same text written escaped by our writer, and with every character that may be escaped escaped.
            var plain = JSONWriter()
            plain.write(string: value)
            let escaped = "\"" + value.unicodeScalars.map { "\\u" + String(format4($0.value)) }.joined() + "\""
            for encoding in [String(decoding: plain.bytes, as: UTF8.self), escaped] where value.unicodeScalars.allSatisfy({ $0.value <= 0xFFFF }) {
                let required = Bool.random(using: &rng)
                let personalize = Bool.random(using: &rng)
                let byString = try Self.reader(#"{"t":\#(encoding)}"#)
                let byText = try Self.reader(#"{"t":\#(encoding)}"#)
                let string = byString.string("t", required: required, personalize: personalize)
                let text = byText.text("t", required: required, personalize: personalize)
                #expect(text?.string == string, "\(encoding)")
                #expect(text?.isEmpty == string?.isEmpty)
                #expect(byText.diagnostics.issues.map(\.description) == byString.diagnostics.issues.map(\.description))
                #expect(byText.diagnostics.warnings.map(\.description) == byString.diagnostics.warnings.map(\.description))

                var fromText = JSONWriter()
                fromText.beginObject()
                fromText.member("t", text: text)
                fromText.endObject()
                var fromString = JSONWriter()
                fromString.beginObject()
                fromString.member("t", string)
                fromString.endObject()
                #expect(fromText.bytes == fromString.bytes, "\(encoding)")

                var payload = PayloadObject()
                payload.set("t", text: text)
                payload.set(PayloadObject.MemberName("u"), text: text)
                #expect(payload["t"] == string.map(JSONValue.string))
                #expect(payload["u"] == string.map(JSONValue.string))
            }
        }
    }

    @Test func wrongTypesAndAbsenceAreReportedAsForStrings() throws {
        let reader = try Self.reader(#"{"n":1,"e":"","o":{}}"#)
        #expect(reader.text("n") == nil)
        #expect(reader.text("e", required: true) == nil)
        #expect(reader.text("o") == nil)
        #expect(reader.text("missing", required: true) == nil)
        #expect(reader.diagnostics.issues.map(\.description) == [
            "content.n: expected a string, found a number",
            "content.e: must not be empty",
            "content.o: expected a string, found an object",
            "content.missing: required",
        ])
    }

    @Test func literalsAndStringsAreText() {
        let literal: ContentText = "abc"
        #expect(literal == ContentText("abc"))
        #expect(literal.string == "abc")
        #expect(!literal.isEmpty)
        #expect(ContentText("").isEmpty)
        #expect(literal.description == "abc")
    }
}

/// Four lower-case hex digits.
private func format4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
