@testable import PipelineCore
import Testing

/// The `{{name}}` fast path (``SimpleTemplate``) must give exactly what Mustache gives: same text,
/// same warnings, same issues, for the strings it accepts and (trivially) for those it hands over.
@Suite("Personalization fast path matches Mustache")
struct PersonalizerFastPathTests {
    static let attributes = ["name": "Ada", "first-name": "Ada", "x_1": "{{name}}", "html": "<b>&\"'</b>", "empty": ""]
    let personalizer = Personalizer(attributes: attributes)

    static let texts: [String] = [
        "{{name}}", "Hi {{name}}!", "{{name}}{{name}}", "{{{name}}}", "{{ name }}", "{{first-name}} {{x_1}}", "{{html}} {{{html}}}",
        "{{missing}} and {{missing}} and {{other}}", "{{empty}}|", "a {b} {{name}}}", "{{{name}}", "{{name}", "{{name", "{{}}",
        "{{#name}}x{{/name}}", "{{^name}}x{{/name}}", "{{! comment }}{{name}}", "{{&name}}", "{{a.b}}", "{{.}}", "{{name?}}",
        "{{uppercased(name)}}", "\n{{name}}", "  \n{{name}}", " \t{{name}}", "\r\n{{name}}", "\u{85}{{name}}", "\u{2028}{{name}}",
        "line 1\n  {{name}}\n", "é{{name}}", "{{name}}\u{301}", "🔥 {{name}} 🔥", "{{name}}é", "\u{600}{{name}}", "{{{{name}}}}",
        "{{=<% %>=}}<% name %>", "{{name}}\n{{#s}}\n", "tab\t{{name}}\tend", "{{name}}\r\n{{name}}", "}}{{name}}{{",
        "{{missing}} {{#s}}x{{/s}}", "{{name}} {{missing}} {{name", "{{name}}, a text long enough to be scanned a word at a time {{name}}",
    ]

    /// Diagnostics of a render of an empty content object (only their issues and warnings are used here).
    static func diagnostics() -> RenderDiagnostics {
        do {
            return RenderDiagnostics(document: try JSONDocument(parsing: Array("{}".utf8)), node: 0, path: FieldPath("content"))
        } catch {
            preconditionFailure("{} does not parse: \(error)")
        }
    }

    @Test(arguments: texts)
    func sameAsMustache(_ text: String) {
        let fast = Self.diagnostics()
        let slow = Self.diagnostics()
        let path = FieldPath("content", "title")
        let fastResult = personalizer.render(text, at: path, into: fast)
        let slowResult = personalizer.renderWithMustache(text, at: path, into: slow)
        #expect(fastResult == slowResult)
        #expect(fast.warnings.map(\.description) == slow.warnings.map(\.description))
        #expect(fast.issues.map(\.description) == slow.issues.map(\.description))
    }

    /// A content string read from the event's bytes (``FieldReader``, with the attributes read in place from the
    /// same document, or given as a dictionary) is personalized exactly as Mustache does it with the attributes as a
    /// dictionary: by `string(_:)` and by `text(_:)`, escaped in the event or not, with the same warnings. Text read
    /// with `text(_:)` is filled as it is written (``SimpleTemplate/write(_:_:readingFrom:into:)``): the same bytes as Mustache's
    /// text written as a JSON string, and as long as it said.
    @Test(arguments: texts, [false, true])
    func readFromTheEventAsMustache(_ text: String, escapedInTheEvent: Bool) throws {
        var attributes = JSONObject()
        for (name, value) in Self.attributes { attributes[name] = .string(value) }
        let encodedText = escapedInTheEvent ? Self.escapingEveryCharacter(text) : String(decoding: JSONValue.string(text).encoded(), as: UTF8.self)
        let json = #"{"attributes":"# + String(decoding: JSONValue.object(attributes).encoded(), as: UTF8.self) + #","content":{"title":"#
            + encodedText + "}}"
        let document = try JSONDocument(parsing: Array(json.utf8))
        let attributesNode = try #require(document.member("attributes", inObjectAt: 0)).value
        let contentNode = try #require(document.member("content", inObjectAt: 0)).value
        let slow = Self.diagnostics()
        let expected = personalizer.renderWithMustache(text, at: FieldPath("content", "title"), into: slow)
        var expectedBytes = JSONWriter()
        expectedBytes.write(string: expected)
        // An optional text empty once personalized is left out, with a warning; one empty as given, without.
        let expectedRead: String? = expected.isEmpty ? nil : expected
        let expectedWarnings = slow.warnings.map(\.description)
            + (expected.isEmpty && !text.isEmpty ? ["content.title: empty once personalized; left out, as if absent"] : [])
        for source in [Personalizer(attributes: .document(document, node: attributesNode)), personalizer] {
            for readsText in [false, true] {
                let diagnostics = RenderDiagnostics(document: document, node: contentNode, path: FieldPath("content"), personalizer: source)
                let reader = FieldReader(root: diagnostics)
                let read = readsText ? reader.text("title") : nil
                let result = readsText ? read?.string : reader.string("title")
                #expect(result == expectedRead, "text(_:) \(readsText)")
                #expect(diagnostics.warnings.map(\.description) == expectedWarnings, "text(_:) \(readsText)")
                #expect(diagnostics.issues.map(\.description) == slow.issues.map(\.description), "text(_:) \(readsText)")
                if let read {
                    var written = JSONWriter()
                    read.write(to: &written)
                    #expect(String(decoding: written.bytes, as: UTF8.self) == String(decoding: expectedBytes.bytes, as: UTF8.self))
                    #expect(read.utf8Count == expected.utf8.count)
                    #expect(read.isEmpty == expected.isEmpty)
                }
            }
        }
    }

    /// `text` as a JSON string with every character escaped (`\uXXXX`, surrogate pairs beyond the BMP).
    static func escapingEveryCharacter(_ text: String) -> String {
        "\"" + text.utf16.map { "\\u" + String(repeating: "0", count: 4 - String($0, radix: 16).count) + String($0, radix: 16) }.joined() + "\""
    }

    @Test func acceptsThePlainForms() {
        #expect(SimpleTemplate.render("Hi {{name}} / {{{name}}}", ["name": "Ada"], missing: { _ in }) == "Hi Ada / Ada")
        #expect(SimpleTemplate.render("{{#s}}x{{/s}}", [:], missing: { _ in }) == nil)
        #expect(SimpleTemplate.render("{{ name }}", [:], missing: { _ in }) == nil)
    }
}
