@testable import PipelineCore
import Testing

/// The `{{name}}` fast path (``SimpleTemplate``) must give exactly what Mustache gives: same text,
/// same warnings, same issues, for the strings it accepts and (trivially) for those it hands over.
@Suite("Personalization fast path matches Mustache")
struct PersonalizerFastPathTests {
    let personalizer = Personalizer(attributes: ["name": "Ada", "first-name": "Ada", "x_1": "{{name}}", "html": "<b>&\"'</b>", "empty": ""])

    static let texts: [String] = [
        "{{name}}", "Hi {{name}}!", "{{name}}{{name}}", "{{{name}}}", "{{ name }}", "{{first-name}} {{x_1}}", "{{html}} {{{html}}}",
        "{{missing}} and {{missing}} and {{other}}", "{{empty}}|", "a {b} {{name}}}", "{{{name}}", "{{name}", "{{name", "{{}}",
        "{{#name}}x{{/name}}", "{{^name}}x{{/name}}", "{{! comment }}{{name}}", "{{&name}}", "{{a.b}}", "{{.}}", "{{name?}}",
        "{{uppercased(name)}}", "\n{{name}}", "  \n{{name}}", " \t{{name}}", "\r\n{{name}}", "\u{85}{{name}}", "\u{2028}{{name}}",
        "line 1\n  {{name}}\n", "é{{name}}", "{{name}}\u{301}", "🔥 {{name}} 🔥", "{{name}}é", "\u{600}{{name}}", "{{{{name}}}}",
        "{{=<% %>=}}<% name %>", "{{name}}\n{{#s}}\n", "tab\t{{name}}\tend", "{{name}}\r\n{{name}}", "}}{{name}}{{",
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

    @Test func acceptsThePlainForms() {
        #expect(SimpleTemplate.render("Hi {{name}} / {{{name}}}", ["name": "Ada"], missing: { _ in }) == "Hi Ada / Ada")
        #expect(SimpleTemplate.render("{{#s}}x{{/s}}", [:], missing: { _ in }) == nil)
        #expect(SimpleTemplate.render("{{ name }}", [:], missing: { _ in }) == nil)
    }
}
