@testable import PipelineCore
import TestSupport
import Testing

/// A reader finds members exactly as `JSONObject` does, whatever the object's size (small objects are searched
/// member by member, larger ones through the render's key table), in whatever order it is asked, and however its
/// lookups move between objects (the table is rebuilt for each object it is asked about).
@Suite("Field lookups")
struct FieldReaderLookupTests {
    /// Keys drawn from few letters and lengths, so that many share a tag (length, first and last byte) and a table
    /// slot; now and then a non-ASCII key, which sends the object to the member-by-member path.
    static func randomKey(_ rng: inout SeededGenerator, nonASCII: Bool) -> String {
        let letters: [String] = nonASCII ? ["a", "b", "é", "\u{212A}", "K"] : ["a", "b", "c", "K"]
        let length = Int.random(in: 0...5, using: &rng)
        return (0..<length).map { _ in letters.randomElement(using: &rng) ?? "a" }.joined()
    }

    /// Also by prepared names (``FieldName``), which find what the same `String` finds.
    @Test func findsMembersAsJSONObjectDoes() throws {
        var rng = SeededGenerator(seed: 0x5EED_1005)
        var lookups = 0
        var tableObjects = 0
        for round in 0..<400 {
            let nonASCII = round % 10 == 9
            // Two sibling objects of 0 to 60 members, read in turns (each turn moves the table to the other).
            var siblings: [JSONObject] = []
            for _ in 0..<2 {
                var object = JSONObject()
                for _ in 0..<Int.random(in: 0...60, using: &rng) {
                    let key = Self.randomKey(&rng, nonASCII: nonASCII)
                    if object[key] == nil { object[key] = .int(Int.random(in: 0...1_000, using: &rng)) }
                }
                if object.count > 8, object.count <= 48 { tableObjects += 1 }
                siblings.append(object)
            }
            var root = JSONObject()
            root["first"] = .object(siblings[0])
            root["second"] = .object(siblings[1])
            let document = try JSONDocument(parsing: JSONValue.object(root).encoded())
            let reader = FieldReader(root: RenderDiagnostics(document: document, node: 0, path: FieldPath("content")))
            let readers = [try #require(reader.object("first")), try #require(reader.object("second"))]
            for _ in 0..<40 {
                let side = Int.random(in: 0...1, using: &rng)
                // Half the keys asked for are members (in random order), half are drawn anew (mostly absent).
                let key =
                    Bool.random(using: &rng) && !siblings[side].isEmpty
                    ? siblings[side].keys.randomElement(using: &rng) ?? "" : Self.randomKey(&rng, nonASCII: true)
                #expect(readers[side].value(key) == siblings[side][key], "round \(round), key \(key) in \(siblings[side])")
                // By a prepared name: the same member (a non-ASCII name is looked up as a `String`).
                #expect(readers[side].value(FieldName(key)) == siblings[side][key], "round \(round), prepared \(key) in \(siblings[side])")
                lookups += 1
            }
        }
        #expect(lookups == 16_000)
        #expect(tableObjects > 200, "the test must reach the table path")
    }

    /// `ignore` marks keys as read without reading them, by `String` and by prepared name (``FieldName``): they are
    /// not reported as unread, and the key neither names is. Found by a plugin author's trial: `ignore` took only
    /// `String`s, where the README says every reader accessor takes either.
    @Test func ignoreMarksKeysByStringAndByPreparedName() throws {
        let document = try JSONDocument(parsing: Array(#"{"legacy":1,"beta":{"x":2},"note":"n","extra":true}"#.utf8))
        let diagnostics = RenderDiagnostics(document: document, node: 0, path: FieldPath("content"))
        let reader = FieldReader(root: diagnostics)
        reader.ignore("legacy", "note")
        reader.ignore(FieldName("beta"))
        diagnostics.warnAboutUnreadKeys(template: "t")
        #expect(diagnostics.recordedWarnings.map(\.path.description) == ["content.extra"])
    }
}
