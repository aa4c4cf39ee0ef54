@testable import PipelineCore
import Testing

/// Colours and choices are checked in the event's bytes when they are written plainly; escaped texts, texts equal
/// only as `String`s and invalid values give what reading them as `String`s gives.
@Suite("Colour and choice fields")
struct FieldReaderChoiceAndColorTests {
    /// A reader of the object `json`, and its diagnostics.
    func reader(_ json: String) throws -> (FieldReader, RenderDiagnostics) {
        let document = try JSONDocument(parsing: Array(json.utf8))
        let diagnostics = RenderDiagnostics(document: document, node: 0, path: FieldPath("content"))
        return (FieldReader(root: diagnostics), diagnostics)
    }

    @Test(arguments: [
        (##""00FF00""##, "00FF00"), (##""#abcdef""##, "abcdef"), (##""\u0023abcdef""##, "abcdef"), (##""00\u0046F00""##, "00FF00"),
    ])
    func colorsAreNormalized(_ value: String, _ expected: String) throws {
        let (reader, diagnostics) = try reader(#"{"c":\#(value)}"#)
        #expect(reader.color("c") == expected)
        #expect(diagnostics.issues.isEmpty)
    }

    @Test(arguments: [###""#00FF0""###, ###""00FF00FF""###, ###""##00FF0""###, ###""00FG00""###, ###""é0FF00""###, ###""\u00e90FF00""###])
    func invalidColorsAreIssuesNamingTheText(_ value: String) throws {
        let (reader, diagnostics) = try reader(#"{"c":\#(value)}"#)
        #expect(reader.color("c") == nil)
        let text = try JSONDocument(parsing: Array(value.utf8)).string(at: 0)
        #expect(diagnostics.issues.map(\.description) == [
            "content.c: must be six hex digits like 00FF00 (optionally after '#'), found '\(text)'"
        ])
    }

    @Test func aMissingRequiredColorIsAnIssue() throws {
        let (reader, diagnostics) = try reader(#"{"c":""}"#)
        #expect(reader.color("c", required: true) == nil)
        #expect(diagnostics.issues.count == 1)
    }

    @Test(arguments: [#""app""#, #""\u0061pp""#])
    func choicesMatchPlainOrEscaped(_ value: String) throws {
        let (reader, diagnostics) = try reader(#"{"k":\#(value)}"#)
        #expect(reader.choice("k", from: ["web", "app", "deeplink"]) == "app")
        #expect(diagnostics.issues.isEmpty)
    }

    @Test(arguments: [(#""WEBURL""#, LinkType.webURL), (#""OPENAPP""#, .openApp), (#""D\u0045EPLINK""#, .deepLink)])
    func choiceIndexesAreTheCasesPositions(_ value: String, _ expected: LinkType) throws {
        let (reader, diagnostics) = try reader(#"{"k":\#(value)}"#)
        #expect(reader.choiceIndex(FieldName("k"), from: LinkType.wireValues).map { LinkType.allCases[$0] } == expected)
        #expect(diagnostics.issues.isEmpty)
    }

    @Test func choiceIndexIssuesAreTheChoicesOrTheirOwn() throws {
        let (reader, diagnostics) = try reader(#"{"a":"web","b":"web","c":""}"#)
        #expect(reader.choiceIndex(FieldName("a"), from: ["fcm", "apns"]) == nil)
        #expect(reader.choiceIndex(FieldName("b"), from: ["fcm", "apns"]) { "unknown platform '\($0)'" } == nil)
        #expect(reader.choiceIndex(FieldName("c"), from: ["fcm", "apns"], required: true) == nil)
        #expect(reader.choiceIndex(FieldName("d"), from: ["fcm", "apns"], required: true) == nil)
        #expect(diagnostics.issues.map(\.description) == [
            "content.a: must be one of fcm, apns, found 'web'", "content.b: unknown platform 'web'",
            "content.c: must not be empty", "content.d: required",
        ])
    }

    /// "é" as e + U+0301 in the event, "é" as U+00E9 in the choices: different bytes, equal `String`s.
    @Test func choicesEqualOnlyAsStringsMatchAsBefore() throws {
        let (reader, diagnostics) = try reader("{\"k\":\"caf\u{65}\u{301}\",\"l\":\"caf\u{65}\u{301}\"}")
        // The event's spelling, as a `String` equal to the choice.
        #expect(reader.choice("k", from: ["caf\u{E9}"]).map { Array($0.utf8) } == Array("caf\u{65}\u{301}".utf8))
        #expect(reader.choiceIndex("l", from: ["cafe", "caf\u{E9}"]) == 1)
        #expect(diagnostics.issues.isEmpty)
    }

    /// Another value, longer or as long as a choice.
    @Test(arguments: ["apps", "apq"])
    func anotherValueIsAnIssueNamingTheChoices(_ value: String) throws {
        let (reader, diagnostics) = try reader(#"{"k":"\#(value)"}"#)
        #expect(reader.choice("k", from: ["web", "app"]) == nil)
        #expect(diagnostics.issues.map(\.description) == ["content.k: must be one of web, app, found '\(value)'"])
    }
}
