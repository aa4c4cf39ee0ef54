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
    /// same document) is personalized exactly as Mustache does it with the attributes as a dictionary: by
    /// `string(_:)` and by `text(_:)`, escaped in the event or not, with the same warnings.
    @Test(arguments: texts)
    func readFromTheEventAsMustache(_ text: String) throws {
        var attributes = JSONObject()
        for (name, value) in Self.attributes { attributes[name] = .string(value) }
        let json = #"{"attributes":"# + String(decoding: JSONValue.object(attributes).encoded(), as: UTF8.self) + #","content":{"title":"#
            + String(decoding: JSONValue.string(text).encoded(), as: UTF8.self) + "}}"
        let document = try JSONDocument(parsing: Array(json.utf8))
        let attributesNode = try #require(document.member("attributes", inObjectAt: 0)).value
        let contentNode = try #require(document.member("content", inObjectAt: 0)).value
        let inPlace = Personalizer(attributes: .document(document, node: attributesNode))
        let slow = Self.diagnostics()
        let expected = personalizer.renderWithMustache(text, at: FieldPath("content", "title"), into: slow)
        for readsText in [false, true] {
            let diagnostics = RenderDiagnostics(document: document, node: contentNode, path: FieldPath("content"), personalizer: inPlace)
            let reader = FieldReader(root: diagnostics)
            let result = readsText ? reader.text("title")?.string : reader.string("title")
            #expect(result == expected, "text(_:) \(readsText)")
            #expect(diagnostics.warnings.map(\.description) == slow.warnings.map(\.description), "text(_:) \(readsText)")
            #expect(diagnostics.issues.map(\.description) == slow.issues.map(\.description), "text(_:) \(readsText)")
        }
    }

    @Test func acceptsThePlainForms() {
        #expect(SimpleTemplate.render("Hi {{name}} / {{{name}}}", ["name": "Ada"], missing: { _ in }) == "Hi Ada / Ada")
        #expect(SimpleTemplate.render("{{#s}}x{{/s}}", [:], missing: { _ in }) == nil)
        #expect(SimpleTemplate.render("{{ name }}", [:], missing: { _ in }) == nil)
    }
}
