@testable import CampaignPipelineCLI
import Foundation
import PipelineCore
import Testing
import TestSupport

/// A plugin defined outside the project's modules: proves a template can be added without
/// editing the core, the shipped plugins or the CLI.
struct ShoutTemplate: TemplateRenderer {
    let templateID = "shout"
    let aliases = ["yell"]
    let summary = "Upper-cases the title."
    var fields = [
        TemplateField("title", "string", requiredOn: [.fcm, .apns], "the text to shout"),
        TemplateField("volume", "integer", "exclamation marks to add"),
    ]

    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let title = input.content.string("title", required: true) ?? ""
        let volume = input.content.integer("volume", in: 0...5) ?? 1
        let text = title.uppercased() + String(repeating: "!", count: volume)
        switch input.platform {
        case .fcm:
            return .fcm(data: ["adb_version": "1", "adb_template_type": "basic", "adb_title": .string(text), "adb_body": .string(text)])
        case .apns:
            return .apns(aps: ["alert": ["title": .string(text), "body": .string(text)]], fields: ["adb_version": "1", "adb_template_type": "basic"])
        }
    }
}

@Suite("Adding a plugin without editing the core")
struct PluginExtensionTests {
    let registry = BuiltinTemplates.registry.registering(ShoutTemplate())

    static func event(template: String, platform: String, content: String) -> [UInt8] {
        Array("""
            {"eventId":"e-\(platform)","occurredAt":"2026-11-20T10:00:00Z","campaignId":"c","template":"\(template)",
             "recipient":{"id":"u","platform":"\(platform)","token":"T","attributes":{"name":"ada"}},"content":\(content)}
            """.utf8)
    }

    @Test func customPluginRendersThroughTheRunner() throws {
        let runner = RenderRunner(registry: registry)
        let fcm = runner.capture(Self.event(template: "yell", platform: "fcm", content: #"{"title":"hi {{name}}","volume":3}"#))
        #expect(fcm.stderr.isEmpty)
        #expect(fcm.stdout == [#"{"message":{"token":"T","data":{"adb_version":"1","adb_template_type":"basic","adb_title":"HI ADA!!!","adb_body":"HI ADA!!!"}}}"#])

        let apns = runner.capture(Self.event(template: "shout", platform: "apns", content: #"{"title":"hey"}"#))
        #expect(apns.stdout == [#"{"aps":{"alert":{"title":"HEY!","body":"HEY!"},"category":"AEPNotification","mutable-content":1},"adb_version":"1","adb_template_type":"basic"}"#])
    }

    @Test func customPluginValidationIsReportedLikeTheShippedOnes() throws {
        let runner = RenderRunner(registry: registry)
        let captured = runner.capture(Self.event(template: "shout", platform: "fcm", content: #"{"volume":9,"colour":"red"}"#))
        #expect(captured.summary.failed == 1)
        #expect(captured.stderr == [
            "error: e-fcm: content.title: required",
            "error: e-fcm: content.volume: must be between 0 and 5, found 9",
            // Kept with the errors: a misspelt key is often why a required field is missing.
            "warning: e-fcm: content.colour: not a field of template 'shout'; ignored",
        ])
    }

    /// What a plugin's tests can check of its `fields` (Plugins/README, step 4): the listing `templates` prints and
    /// what `render` reads, compared on samples that hold every field.
    @Test("a plugin's fields are checked against what its render reads")
    func fieldListingIsChecked() throws {
        #expect(templateFieldListingProblems(of: ShoutTemplate(), contents: [["title": "hi", "volume": 2]]) == [])

        // A field renamed in `fields` and not in `render`, a sample that leaves one out, a key nobody reads.
        var drifted = ShoutTemplate()
        drifted.fields[1].name = "loudness"
        #expect(templateFieldListingProblems(of: drifted, contents: [["title": "hi", "volume": 2], ["title": "hi", "loudness": 2]]) == [
            "content 0: 'volume' is not in fields",
            "content 1: 'loudness' is read on neither platform",
        ])
        // A key nobody reads, nested: warned of as a whole (`extra`), found by its values. `null` is absent.
        #expect(templateFieldListingProblems(of: ShoutTemplate(), contents: [["title": "hi", "volume": nil, "extra": ["a": [[1], [2]], "b": [:]]]]) == [
            "content 0: 'extra.a[][]' is not in fields",
            "content 0: 'extra.b' is not in fields",
            "content 0: 'extra.a[][]' is read on neither platform",
            "content 0: 'extra.b' is read on neither platform",
            "fields lists 'volume', which no content holds",
        ])
        // Read on one platform only, and an object one platform never opens: by key on FCM, as a whole on APNs.
        struct Split: TemplateRenderer {
            let templateID = "split"
            let fields = [TemplateField("title", "string", ""), TemplateField("colors.background", "colour", "")]
            func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
                let title = input.content.string("title")
                guard input.platform == .fcm else { return .apns(aps: ["alert": .string(title ?? "")], fields: [:]) }
                var data: PayloadObject = ["adb_title": .string(title ?? "")]
                data.set("adb_clr_bg", input.content.object("colors")?.color("background"))
                return .fcm(data: data)
            }
        }
        #expect(templateFieldListingProblems(of: Split(), contents: [["title": "hi", "colors": ["background": "#112233", "timer": "000000"]]]) == [
            "content 0: 'colors.timer' is not in fields",
            "content 0: 'colors.timer' is read on neither platform",
        ])
        // An array warned of whole (`tags`: its leaf `tags[]`), an empty one, a key that begins another's name.
        #expect(templateFieldListingProblems(of: Split(), contents: [["title": "hi", "colors": ["background": "#112233"], "color": "red", "tags": [1], "none": []]]) == [
            "content 0: 'color' is not in fields",
            "content 0: 'tags[]' is not in fields",
            "content 0: 'none[]' is not in fields",
            "content 0: 'color' is read on neither platform",
            "content 0: 'none[]' is read on neither platform",
            "content 0: 'tags[]' is read on neither platform",
        ])
        #expect(templateFieldListingProblems(of: ShoutTemplate(), contents: [["volume": 2]]) == [
            #"content 0 renders on neither platform: on fcm: fields-fcm: content.title: required; on apns: fields-apns: content.title: required"#,
            "fields lists 'title', which no content holds",
        ])
    }

    @Test func shippedTemplatesStillWork() throws {
        // Those `BuiltinTemplates` registers (the shipped ones first, then any a project added to it), then this one.
        #expect(registry.renderers.map(\.templateID) == BuiltinTemplates.renderers.map(\.templateID) + ["shout"])
        #expect(Array(registry.renderers.map(\.templateID).prefix(3)) == ["basic", "carousel", "timer"])
        #expect(try registry.renderer(named: "car").templateID == "carousel")
    }

    /// Found by a plugin author's trial: a plugin given the alias `car` took it from `carousel` without a word, and
    /// `templates` still listed `carousel (aliases: car)`; the shipped carousel sample then failed through the other
    /// plugin. The listing and `render` now say which plugin took which name.
    @Test func aPluginTakingAShippedNameIsNamed() {
        struct Promo: TemplateRenderer {
            let templateID = "promo"
            let aliases = ["car"]
            func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload { .fcm(data: [:]) }
        }
        let registry = BuiltinTemplates.registry.registering(Promo())
        let listing = TemplatesCommand.listing(for: registry)
        #expect(listing.contains("\ncarousel\n"), "no alias left to carousel: \(listing)")
        #expect(listing.contains("\npromo (aliases: car)\n  No fields listed (the plugin's `fields` is empty).\n\n"), "no table header without rows: \(listing)")
        #expect(listing.hasSuffix("Names taken by a later registration:\n  template 'promo' takes the name 'car' from template 'carousel'\n"), "\(listing)")
        #expect(RenderRunner(registry: registry).overrideWarnings == ["warning: template 'promo' takes the name 'car' from template 'carousel'"])
        #expect(RenderRunner(registry: self.registry).overrideWarnings.isEmpty)
        #expect(!TemplatesCommand.listing(for: self.registry).contains("Names taken"))
    }

    /// `render`'s warnings for names taken are written at once, before any output. Found by a plugin author's trial:
    /// they were buffered with the event's diagnostics and came after the payloads, where Plugins/README.md says
    /// "before its output".
    @Test func renderWarnsAboutTakenNamesBeforeItsOutput() throws {
        struct Promo: TemplateRenderer {
            let templateID = "promo"
            let aliases = ["car"]
            func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload { .fcm(data: [:]) }
        }
        let pipe = Pipe()
        RenderCommand.reportOverrides(of: RenderRunner(registry: BuiltinTemplates.registry.registering(Promo())), to: pipe.fileHandleForWriting)
        RenderCommand.reportOverrides(of: RenderRunner(registry: registry), to: pipe.fileHandleForWriting)
        try pipe.fileHandleForWriting.close()
        let written = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(written == "warning: template 'promo' takes the name 'car' from template 'carousel'\n")
    }

    @Test func templatesListingIncludesTheCustomPlugin() {
        let listing = TemplatesCommand.listing(for: registry)
        #expect(listing.contains("shout (aliases: yell)\n  Upper-cases the title.\n"))
        #expect(listing.contains("carousel (aliases: car)"))
        let titleRow = listing.split(separator: "\n").first { $0.hasPrefix("  title ") && $0.contains("the text to shout") }
        #expect(titleRow?.split(separator: " ", omittingEmptySubsequences: true).prefix(4) == ["title", "string", "required", "required"])
    }

    @Test("templates --json lists a plugin's id, aliases, summary and fields, and the names it took")
    func templatesJSONListing() throws {
        struct Promo: TemplateRenderer {
            let templateID = "promo"
            let aliases = ["car"]
            func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload { .fcm(data: [:]) }
        }
        let registry = self.registry.registering(Promo())
        let listing = TemplatesCommand.jsonListing(of: [try registry.renderer(named: "yell"), try registry.renderer(named: "carousel")], in: registry)
        let templates = try #require(listing.objectValue?["templates"]?.arrayValue)
        #expect(String(decoding: templates[0].encoded(), as: UTF8.self) == """
            {"id":"shout","aliases":["yell"],"summary":"Upper-cases the title.","fields":[\
            {"name":"title","type":"string","requiredOn":["fcm","apns"],"summary":"the text to shout"},\
            {"name":"volume","type":"integer","requiredOn":[],"summary":"exclamation marks to add"}]}
            """)
        // `car` is promo's now: carousel answers to no alias.
        #expect(templates[1].objectValue?["id"] == "carousel" && templates[1].objectValue?["aliases"] == [])
        #expect(templates[1].objectValue?["fields"]?.arrayValue?.count == (try BuiltinTemplates.registry.renderer(named: "carousel")).fields.count)
        #expect(listing.objectValue?["overrides"] == ["template 'promo' takes the name 'car' from template 'carousel'"])
        #expect(TemplatesCommand.jsonListing(of: self.registry.renderers, in: self.registry).objectValue?["overrides"] == nil)
    }
}
