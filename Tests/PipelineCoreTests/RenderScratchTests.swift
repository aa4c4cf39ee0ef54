@testable import PipelineCore
import Synchronization
import TestSupport
import Testing

/// A ``RenderScratch`` kept from event to event, as a worker keeps one, must leave no trace of one event in the next:
/// every outcome is the one a new scratch gives, whatever came before (failures, warnings, documents past the
/// 512 nodes its marks keep in place, readers past the 16 places it keeps in place).
@Suite("RenderScratch: reused from event to event, as new each time")
struct RenderScratchTests {
    let registry = TemplateRegistry([NoteTemplate(), NestedTemplate()])

    /// An event whose content has `count` keys no template reads (a warning each, past node 512 when there are many).
    static func unknownKeys(_ count: Int, title: String? = "Hi {{name}}") -> [UInt8] {
        let keys = (0..<count).map { #""unknown\#($0)":"\#($0)""# }
        let title = title.map { #""title":"\#($0)","# } ?? ""
        return Array(eventJSON(content: "{" + title + keys.joined(separator: ",") + "}").utf8)
    }

    /// An event of the nested template with `count` list elements, each read with two inner objects (three places
    /// each, past the 16 kept in place), each with a key nobody reads.
    static func nested(_ count: Int) -> [UInt8] {
        let element = #"{"known":"k","inner":{"known":"k","x":1},"more":{"known":"k","y":2},"z":3}"#
        let list = Array(repeating: element, count: count).joined(separator: ",")
        return Array(eventJSON(template: "nested", content: #"{"title":"T","a":{"inner":{"known":"k"},"q":1},"list":["# + list + "]}").utf8)
    }

    static let events: [(name: String, bytes: [UInt8])] = [
        ("many unknown keys", unknownKeys(400)),
        ("no title, unknown keys", unknownKeys(3, title: nil)),
        ("plain", Array(eventJSON().utf8)),
        ("nested, 12 elements", nested(12)),
        ("missing attribute", Array(eventJSON(attributes: "{}", content: #"{"title":"Hi {{name}}","body":"{{other}}"}"#).utf8)),
        ("apns", Array(eventJSON(platform: "apns", content: #"{"title":"Hi {{name}}","note":"n"}"#).utf8)),
        ("invalid JSON", Array(#"{"eventId":"x","#.utf8)),
        ("unknown template", Array(eventJSON(template: "nope").utf8)),
        ("many unknown keys again", unknownKeys(600)),
        ("plain again", Array(eventJSON().utf8)),
    ]

    @Test func eachOutcomeIsTheOneANewScratchGives() throws {
        let scratch = RenderScratch()
        // Twice through, so that every event also follows every other kind.
        for (name, bytes) in Self.events + Self.events.reversed() {
            let reused = registry.render(eventBytes: bytes, scratch: scratch)
            let new = registry.render(eventBytes: bytes)
            #expect(outcomeSummary(reused) == outcomeSummary(new), "\(name)")
        }
    }

    /// The events were chosen to reach what a reused scratch keeps: warnings at nodes past 512, and readers past 16.
    @Test func theEventsReachWhatTheScratchKeeps() throws {
        guard case .rendered(let many) = registry.render(eventBytes: Self.unknownKeys(600)) else {
            Issue.record("the event with many keys does not render")
            return
        }
        #expect(many.warnings.count == 600)
        #expect(try JSONDocument(parsing: Self.unknownKeys(600)).nodes.count > 1_024)
        guard case .rendered(let nested) = registry.render(eventBytes: Self.nested(12)) else {
            Issue.record("the nested event does not render")
            return
        }
        // One warning per element (`z`) and per inner object (`x`, `y`), and `a.q`: 37 places read.
        #expect(nested.warnings.count == 1 + 12 * 3)
    }

    /// Decoding and rendering with one scratch, as the pipeline's event processor does, between them a lookup of the
    /// campaign's content in another document.
    @Test func decodingAndRenderingShareOneScratch() throws {
        let scratch = RenderScratch()
        for (name, bytes) in Self.events {
            let new: String
            let reused: String
            do throws(PipelineError) {
                new = outcomeSummary(.rendered(try registry.render(try PushRequest(json: bytes))))
            } catch {
                new = outcomeSummary(.failed(error))
            }
            do throws(PipelineError) {
                let request = try PushRequest(json: bytes, scratch: scratch)
                reused = outcomeSummary(.rendered(try registry.render(request, content: nil, scratch: scratch)))
            } catch {
                reused = outcomeSummary(.failed(error))
            }
            #expect(reused == new, "\(name)")
        }
        let stored = CampaignContent(["title": "Stored {{name}}", "unread": "u"])
        let request = try PushRequest(json: Array(eventJSON(content: nil).utf8), scratch: scratch)
        let notification = try registry.render(request, content: stored, scratch: scratch)
        #expect(notification.payloadMember("adb_title") == "Stored Ada")
        #expect(notification.warnings.map(\.description) == ["content.unread: not a field of template 'note'; ignored"])
    }

    /// A reader kept past its render, once the scratch is set up for another event, stops the process instead of
    /// reading that event's fields (or marking them, or failing it with its issues).
    @Test func aReaderUsedAfterItsRenderStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let scratch = RenderScratch()
            let document = try JSONDocument(parsing: Array(#"{"a":"x"}"#.utf8))
            let reader = FieldReader(root: scratch.diagnostics(document: document, node: 0, path: FieldPath("content")))
            _ = scratch.diagnostics(document: document, node: 0, path: FieldPath("content"))
            _ = reader.string("a")
        }
        await #expect(processExitsWith: .failure) {
            let scratch = RenderScratch()
            let document = try JSONDocument(parsing: Array(#"{"a":"x"}"#.utf8))
            let reader = FieldReader(root: scratch.diagnostics(document: document, node: 0, path: FieldPath("content")))
            _ = scratch.diagnostics(document: document, node: 0, path: FieldPath("content"))
            reader.addIssue(.invalidField, "a", "from an earlier event")
        }
        // The elements of an array of objects, iterated after the render they were read in.
        await #expect(processExitsWith: .failure) {
            let scratch = RenderScratch()
            let document = try JSONDocument(parsing: Array(#"{"list":[{"a":"x"}]}"#.utf8))
            let reader = FieldReader(root: scratch.diagnostics(document: document, node: 0, path: FieldPath("content")))
            guard let elements = reader.objectElements("list") else { return }  // exits normally: the test fails
            _ = scratch.diagnostics(document: document, node: 0, path: FieldPath("content"))
            for element in elements { _ = element }
        }
    }

    /// Within its render a reader, and the readers of the objects it opens, read as before.
    @Test func aReaderWorksWithinItsRender() throws {
        let scratch = RenderScratch()
        let document = try JSONDocument(parsing: Array(#"{"a":"x","o":{"b":"y"}}"#.utf8))
        let reader = FieldReader(root: scratch.diagnostics(document: document, node: 0, path: FieldPath("content")))
        #expect(reader.string("a") == "x")
        #expect(reader.object("o")?.string("b") == "y")
        let next = FieldReader(root: scratch.diagnostics(document: document, node: 0, path: FieldPath("content")))
        #expect(next.string("a") == "x")
    }

    /// The APNs `aps` objects a template took (``StandardFields/apnsAps()``), kept past their renders.
    final class KeptObjects: Sendable {
        let aps = Mutex<[PayloadObject]>([])
    }

    /// A template that builds its APNs payload with ``StandardFields`` and keeps each `aps` object it returns.
    struct KeepingTemplate: TemplateRenderer {
        let templateID = "keeping"
        let kept: KeptObjects

        func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
            let standard = StandardFields(reading: input.content, platform: input.platform, features: [], guidelines: .apns)
            let aps = standard.apnsAps()
            kept.aps.withLock { $0.append(aps) }
            return .apns(aps: aps, fields: standard.apnsFields(templateType: templateID))
        }
    }

    /// A scratch lends the `aps` object to the template and takes it back once it is in the payload, for the next
    /// render: an object the template kept is not changed by the renders after it, and what a notification says its
    /// template rendered is what the template returned.
    @Test func anAPSObjectLentByTheScratchIsNotChangedByLaterRenders() throws {
        let kept = KeptObjects()
        let registry = TemplateRegistry([KeepingTemplate(kept: kept)])
        let scratch = RenderScratch()
        var notifications: [RenderedNotification] = []
        for title in ["First", "Second, a longer title than the first", "3"] {
            let event = eventJSON(template: "keeping", platform: "apns", content: #"{"title":"\#(title)","body":"Body of \#(title)","sound":"s"}"#)
            guard case .rendered(let notification) = registry.render(eventBytes: Array(event.utf8), scratch: scratch) else {
                Issue.record("\(title) does not render")
                return
            }
            notifications.append(notification)
        }
        // The last render's object is back in the scratch, its memory kept for the next.
        let spare = scratch.objects.take(reservingBytes: 0, members: 0)
        #expect(spare.isEmpty && spare.bytes.capacity >= 64)
        let apsObjects = kept.aps.withLock { $0 }
        #expect(apsObjects.count == 3)
        for (index, title) in ["First", "Second, a longer title than the first", "3"].enumerated() {
            let aps = apsObjects[index]
            #expect(aps["alert"] == .object(["title": .string(title), "body": .string("Body of \(title)")]), "\(title)")
            #expect(aps["sound"] == "s")
            guard case .apns(let renderedAps, _) = notifications[index].templatePayload else {
                Issue.record("\(title): not an APNs payload")
                continue
            }
            #expect(renderedAps == aps, "\(title)")
            #expect(String(decoding: notifications[index].payloadBytes, as: UTF8.self).hasPrefix(#"{"aps":{"alert":{"title":"\#(title)","#), "\(title)")
        }
    }
}
