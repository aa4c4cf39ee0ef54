import PipelineCore

/// A minimal plugin for core tests: copies `title`/`body` (and optional `note`) to both platforms.
struct NoteTemplate: TemplateRenderer {
    let templateID = "note"
    let aliases = ["n"]

    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let title = input.content.string("title", required: true)
        let body = input.content.string("body")
        let note = input.content.string("note")
        switch input.platform {
        case .fcm:
            var data: PayloadObject = ["adb_template_type": "note"]
            data.set("adb_title", title)
            data.set("adb_body", body)
            data.set("adb_note", note)
            return .fcm(data: data)
        case .apns:
            var alert = PayloadObject()
            alert.set("title", title)
            alert.set("body", body)
            var aps = PayloadObject()
            aps.set("alert", object: alert)
            var fields: PayloadObject = ["adb_template_type": "note"]
            fields.set("adb_note", note)
            return .apns(aps: aps, fields: fields)
        }
    }
}

/// A plugin that always renders an FCM payload, whatever the platform (a broken plugin).
struct WrongPlatformTemplate: TemplateRenderer {
    let templateID = "wrong"
    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        .fcm(data: ["adb_title": "x"])
    }
}

/// A plugin that throws its own error.
struct ThrowingTemplate: TemplateRenderer {
    let templateID = "throws"
    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        throw PipelineError(.invalidField, at: input.content.path(of: "anything"), "nope")
    }
}

/// Builds a `push.requested` event as JSON text.
func eventJSON(
    eventId: String = "evt-1",
    template: String = "note",
    platform: String = "fcm",
    attributes: String = #"{"name":"Ada"}"#,
    options: String? = nil,
    content: String? = #"{"title":"Hello","body":"World"}"#,
    custom: String? = nil
) -> String {
    var members = [
        #""specVersion":"1""#, #""type":"push.requested""#, #""eventId":"\#(eventId)""#,
        #""occurredAt":"2026-11-20T10:00:00Z""#, #""campaignId":"spring""#, #""template":"\#(template)""#,
        #""recipient":{"id":"user-42","platform":"\#(platform)","token":"TOKEN","attributes":\#(attributes)}"#,
    ]
    if let options { members.append(#""options":\#(options)"#) }
    if let content { members.append(#""content":\#(content)"#) }
    if let custom { members.append(#""custom":\#(custom)"#) }
    return "{" + members.joined(separator: ",") + "}"
}

/// A plugin that opens the object `a` three times, reading `x` through one reader, `inner` through another and `y`
/// through the third.
struct TwiceOpenedTemplate: TemplateRenderer {
    let templateID = "twice"
    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        let title = content.string("title", required: true)
        _ = content.object("a")?.string("x")
        _ = content.object("a")?.object("inner")?.string("known")
        _ = content.object("a")?.string("y")
        var data: PayloadObject = ["adb_template_type": "twice"]
        data.set("adb_title", title)
        return .fcm(data: data)
    }
}

/// A plugin that reads nested objects out of order: `a`, then `b` and `list[]`, then `a.inner` (made after `b`), then
/// each element's `inner` and `more`, so the unread-key warnings show whether they follow the objects' nesting or the
/// order they were read in.
struct NestedTemplate: TemplateRenderer {
    let templateID = "nested"
    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        let title = content.string("title", required: true)
        let a = content.object("a")
        _ = content.object("b")?.string("known")
        let list = content.objects("list") ?? []
        for item in list { _ = item.string("known") }
        _ = a?.object("inner")?.string("known")
        for item in list {
            _ = item.object("inner")?.string("known")
            _ = item.object("more")?.string("known")
        }
        var data: PayloadObject = ["adb_template_type": "nested"]
        data.set("adb_title", title)
        return .fcm(data: data)
    }
}

/// A plugin that reads the objects of `list[]` (required), each element's `known` and `inner.known`, through
/// ``FieldReader/objects(_:required:)-(String,_)`` (readers made up front) or, `streamed`, through
/// ``FieldReader/objectElements(_:required:)-(String,_)`` (each made as the loop reaches it, after the objects read
/// below the one before). It writes the element count it was given and the number of object elements it read.
struct ListTemplate: TemplateRenderer {
    let streamed: Bool
    var templateID: String { "list" }

    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        var read = 0
        var count: Int?
        if streamed {
            if let elements = content.objectElements("list", required: true) {
                count = elements.count
                for item in elements { readElement(item, &read) }
            }
        } else if let readers = content.objects("list", required: true) {
            count = content.elementCount("list")
            for item in readers { readElement(item, &read) }
        }
        var data: PayloadObject = ["adb_template_type": "list"]
        data.set("count", count.map(String.init))
        data.set("read", String(read))
        return .fcm(data: data)
    }

    private func readElement(_ item: FieldReader, _ read: inout Int) {
        _ = item.string("known")
        _ = item.object("inner")?.string("known")
        read += 1
    }
}
