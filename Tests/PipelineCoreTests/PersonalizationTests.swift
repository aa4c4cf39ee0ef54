@testable import PipelineCore
import Testing

@Suite("Personalization with Mustache")
struct PersonalizationTests {
    let registry = TemplateRegistry([NoteTemplate()])

    func render(content: String, attributes: String = #"{"name":"Ada","html":"<b>&\"'</b>"}"#) throws -> RenderedNotification {
        let outcome = registry.render(eventBytes: Array(eventJSON(attributes: attributes, content: content).utf8))
        switch outcome {
        case .rendered(let notification): return notification
        case .failed(let error): throw error
        }
    }

    func data(_ notification: RenderedNotification) -> JSONObject? {
        guard case .fcm(let message) = notification.payload else { return nil }
        return message.data
    }

    @Test func fillsPlaceholdersFromAttributes() throws {
        let notification = try render(content: #"{"title":"Hi {{name}}!","body":"{{ name }} / {{{name}}}"}"#)
        #expect(data(notification)?["adb_title"] == "Hi Ada!")
        #expect(data(notification)?["adb_body"] == "Ada / Ada")
        #expect(notification.warnings.isEmpty)
    }

    /// An event's attributes are looked up in place (by the name's bytes, or as `String`s when either side is not
    /// plain ASCII): an escaped name and value, a canonically equivalent name (U+212A KELVIN SIGN is "K"), and a name
    /// that only a longer one starts with.
    @Test func attributesReadInPlaceAreFoundAsInADictionary() throws {
        let attributes = #"{"n\u0061me":"A\"da","\u212a":"kelvin","name2":"no"}"#
        let notification = try render(content: #"{"title":"{{name}} {{K}}","body":"{{nam}}"}"#, attributes: attributes)
        #expect(data(notification)?["adb_title"] == #"A"da kelvin"#)
        #expect(data(notification)?["adb_body"] == nil, "an optional text empty once personalized is left out")
        #expect(notification.warnings.map(\.description) == [
            "content.body: attribute 'nam' is not in recipient.attributes; rendered empty",
            "content.body: empty once personalized; left out, as if absent",
        ])
        let request = try PushRequest(json: Array(eventJSON(attributes: attributes).utf8))
        #expect(request.recipient.attributes == ["name": #"A"da"#, "\u{212A}": "kelvin", "name2": "no"])
    }

    @Test func doesNotEscapeHTML() throws {
        let notification = try render(content: #"{"title":"{{html}}","body":"{{{html}}}"}"#)
        #expect(data(notification)?["adb_title"] == #"<b>&"'</b>"#)
        #expect(data(notification)?["adb_body"] == #"<b>&"'</b>"#)
    }

    @Test func missingAttributeRendersEmptyWithAWarning() throws {
        let notification = try render(content: #"{"title":"Hi {{first}} {{last}}","body":"b","note":"{{first}}"}"#, attributes: "{}")
        #expect(data(notification)?["adb_title"] == "Hi  ")
        #expect(notification.warnings.map(\.description) == [
            "content.title: attribute 'first' is not in recipient.attributes; rendered empty",
            "content.title: attribute 'last' is not in recipient.attributes; rendered empty",
            "content.note: attribute 'first' is not in recipient.attributes; rendered empty",
            "content.note: empty once personalized; left out, as if absent",
        ])
    }

    @Test func plainStringsAndSingleBracesAreUntouched() throws {
        let notification = try render(content: #"{"title":"{name} <&> 100%","body":"}} {"}"#)
        #expect(data(notification)?["adb_title"] == "{name} <&> 100%")
        #expect(Personalizer.containsPlaceholder("a { b } c") == false)
        #expect(Personalizer.containsPlaceholder("a {{b}}") == true)
    }

    @Test("a {{ is found wherever it is, also across the eight-byte words the scan skips")
    func placeholdersAtEveryPosition() {
        for before in 0...20 {
            for after in 0...10 {
                let head = String(repeating: "a", count: before)
                let tail = String(repeating: "é", count: after)
                #expect(Personalizer.containsPlaceholder(head + "{{" + tail), "\(before) \(after)")
                #expect(!Personalizer.containsPlaceholder(head + "{" + tail), "\(before) \(after)")
                #expect(!Personalizer.containsPlaceholder(head + "{x{" + tail), "\(before) \(after)")
            }
        }
    }

    /// The text-content-type pragma the personalizer puts first stood alone on its line before a blank first line,
    /// and Mustache dropped that line: some recipients' texts lost a leading line break (found by review).
    @Test(arguments: ["\n", "\n\n", "  \n", "\t\n", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}"])
    func aLeadingBlankLineIsKept(_ leading: String) {
        let personalizer = Personalizer(attributes: ["name": "Ada"])
        let diagnostics = PersonalizerFastPathTests.diagnostics()
        for text in [leading + "Hi {{name}}", leading + "{{#name}}Hi {{name}}{{/name}}"] {
            #expect(personalizer.render(text, at: FieldPath("content", "body"), into: diagnostics) == leading + "Hi Ada", "\(Array(text.unicodeScalars))")
        }
        #expect(diagnostics.issues.isEmpty && diagnostics.warnings.isEmpty)
    }

    @Test func invalidMustacheIsAFieldError() throws {
        #expect(throws: PipelineError.self) { try render(content: #"{"title":"{{#open}} never closed"}"#) }
        let error = try #require(throws: PipelineError.self) { try render(content: #"{"title":"{{#open}} x"}"#) }
        #expect(error.issues.map(\.path.description) == ["content.title"])
        #expect(error.code == .invalidField)
    }

    /// Mustache's own error named its parser's types and counted columns from the pragma put in front of the text;
    /// the issue says why and where in the text (found by review).
    @Test(arguments: [
        (#"Hi {{#a}}x"#, "a section ({{#name}} or {{^name}}) is not closed ({{/name}}) (line 1, column 11)"),
        (#"Hi {{#a}}x{{/b}}"#, "a section is closed with another name than it was opened with (line 1, column 14)"),
        (#" \n{{#a}}x\ny"#, "a section ({{#name}} or {{^name}}) is not closed ({{/name}}) (line 3, column 2)"),
        (#"Hi {{a b}}"#, "a tag's name is not finished (line 1, column 8)"),
        (#"{{{name}}"#, "a tag is not closed (line 1, column 10)"),
        // Mustache's column after a `\r\n` or a U+2028 is not the line's: the line alone (found by review).
        (#"a\r\n{{#b}}x"#, "a section ({{#name}} or {{^name}}) is not closed ({{/name}}) (line 2)"),
        (#"a\u2028{{#b}}x"#, "a section ({{#name}} or {{^name}}) is not closed ({{/name}}) (line 2)"),
    ])
    func invalidMustacheSaysWhyAndWhere(_ title: String, _ reason: String) throws {
        let error = try #require(throws: PipelineError.self) { try render(content: #"{"title":"\#(title)","body":"b"}"#) }
        #expect(error.issues.map(\.reason) == ["invalid {{placeholder}} syntax: " + reason])
    }

    /// Mustache dropped a last line of only spaces and tabs (`x\n  ` gave `x\n`), where the fast path keeps it: a
    /// text with a section, or with a line separator (U+2028, which only Mustache fills), lost its end (found by
    /// review).
    @Test(arguments: [
        ("{{#name}}x{{/name}}\n  ", "x\n  "),
        ("{{name}}\u{2028} \n\t", "Ada\u{2028} \n\t"),
        ("{{#name}}x{{/name}}\r\n ", "x\r\n "),
        ("{{#name}}x{{/name}} \n  \n", "x \n  \n"),
    ])
    func blankLastLineIsKept(_ title: String, _ expected: String) throws {
        let notification = try render(content: String(decoding: JSONValue.object(["title": .string(title), "body": "b"]).encoded(), as: UTF8.self))
        #expect(data(notification)?["adb_title"] == .string(expected))
    }

    /// Mustache drops a `{{` that ends the text (`Save {{` gave `Save `, sent as is), where one left open before
    /// the end is an error: an unclosed `{{` is an error wherever it is (found by review).
    @Test(arguments: ["Save {{", "Save {{x}} {{", "Save {{x"])
    func unclosedTagIsAFieldError(_ title: String) throws {
        let error = try #require(throws: PipelineError.self) { try render(content: #"{"title":"\#(title)","body":"b"}"#) }
        #expect(error.code == .invalidField)
        #expect(error.issues.map(\.reason).first?.contains("is not closed with }}") == true, "\(error.issues)")
    }

    /// After a change of delimiters `{{` is plain text, which Mustache writes as it is.
    @Test func doubleBracesAfterADelimiterChangeAreText() throws {
        let notification = try render(content: #"{"title":"{{=<% %>=}}<%name%> {{","body":"b"}"#)
        #expect(data(notification)?["adb_title"] == "Ada {{")
    }
}

extension Personalizer {
    /// Whether `text` has a `{{` (a placeholder may start there): what the personalizer's scan finds before it fills
    /// or hands over a text.
    static func containsPlaceholder(_ text: String) -> Bool {
        let bytes = text.utf8.span
        var scanner = SimpleTemplate.TagScanner()
        while scanner.next(in: bytes) != nil {}
        return scanner.result != .noPlaceholder
    }
}
