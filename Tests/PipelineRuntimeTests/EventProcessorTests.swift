import Foundation
import PipelineCore
import Testing

@testable import PipelineRuntime

@Suite("Deciding one event: render, reject, expire or suppress")
struct EventProcessorTests {
    let processor = EventProcessor(registry: builtinRegistry)

    func event(_ fields: String, content: String? = #"{"title":"Hi {{name}}","body":"Body"}"#, template: String = "basic") -> [UInt8] {
        let contentPart = content.map { #","content":\#($0)"# } ?? ""
        return Array(
            #"{"eventId":"e-1","occurredAt":"2026-11-20T10:00:00Z","campaignId":"c-1","template":"\#(template)","recipient":{"id":"u-1","platform":"fcm","token":"t","attributes":{"name":"Ada"}}\#(fields)\#(contentPart)}"#
                .utf8
        )
    }

    func time(_ text: String) -> Timestamp { try! Timestamp(rfc3339: text) }

    @Test("a send after its expiresAt expires with cause ttl, judged at the decision time")
    func ttl() {
        let bytes = event(#","expiresAt":"2026-11-20T12:00:00Z""#)
        guard case .expired(_, .ttl, _) = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: time("2026-11-20T12:00:01Z")) else {
            Issue.record("expected ttl expiry")
            return
        }
        guard case .deliver = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: time("2026-11-20T11:59:59Z")) else {
            Issue.record("expected delivery before expiresAt")
            return
        }
        // By event time (replays), the event's own occurredAt is the decision time.
        guard case .deliver = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: nil) else {
            Issue.record("expected delivery by event time")
            return
        }
    }

    @Test("a cancelled campaign's sends are suppressed; a later definition reopens it")
    func cancellation() throws {
        var table = CampaignTable()
        try table.apply(json: Array(#"{"type":"campaign.cancelled","campaignId":"c-1","occurredAt":"2026-11-20T09:00:00Z"}"#.utf8))
        let bytes = event("")
        guard case .suppressed(let identity) = processor.process(bytes, sourcePosition: "t/0@0", campaigns: table, decisionTime: time("2026-11-20T10:00:00Z")) else {
            Issue.record("expected suppression")
            return
        }
        #expect(identity.eventId == "e-1")
        #expect(identity.messageId == MessageID.make(eventId: "e-1", platform: .fcm))
        // Before the cancellation, the campaign was live.
        guard case .deliver = processor.process(bytes, sourcePosition: "t/0@0", campaigns: table, decisionTime: time("2026-11-20T08:00:00Z")) else {
            Issue.record("expected delivery before the cancellation")
            return
        }
        try table.apply(json: Array(#"{"type":"campaign.defined","campaignId":"c-1","version":2,"occurredAt":"2026-11-20T09:30:00Z","content":{"title":"t","body":"b"}}"#.utf8))
        #expect(!table.isCancelled("c-1", asOf: time("2026-11-20T10:00:00Z")))
    }

    @Test("a send without content renders its campaign's definition: the named version, else the latest")
    func campaignContent() throws {
        var table = CampaignTable()
        try table.apply(json: Array(#"{"type":"campaign.defined","campaignId":"c-1","version":1,"occurredAt":"2026-11-19T00:00:00Z","content":{"title":"Old {{name}}","body":"b"}}"#.utf8))
        try table.apply(json: Array(#"{"type":"campaign.defined","campaignId":"c-1","version":2,"occurredAt":"2026-11-19T01:00:00Z","content":{"title":"New {{name}}","body":"b"}}"#.utf8))
        func title(_ fields: String) -> String? {
            guard case .deliver(let notification, _) = processor.process(event(fields, content: nil), sourcePosition: "t/0@0", campaigns: table, decisionTime: time("2026-11-20T10:00:00Z")),
                case .fcm(let message) = notification.payload
            else { return nil }
            return message.data["adb_title"]?.stringValue
        }
        #expect(title("") == "New Ada")
        #expect(title(#","campaignVersion":1"#) == "Old Ada")
        // The pipeline waits for its table to read the definitions topic to its end, then rejects it with this error.
        guard case .awaitingDefinition(_, let error) = processor.process(event(#","campaignVersion":7"#, content: nil), sourcePosition: "t/0@0", campaigns: table, decisionTime: nil) else {
            Issue.record("expected an unknown version to await its definition")
            return
        }
        #expect(error.issues.first?.path.description == "content")
        // Held, but defined after the decision time: reading more of the topic cannot help, so it is rejected now.
        guard case .rejected(_, let early) = processor.process(event("", content: nil), sourcePosition: "t/0@0", campaigns: table, decisionTime: time("2026-11-18T00:00:00Z")) else {
            Issue.record("expected a send decided before its campaign's definitions to be rejected at once")
            return
        }
        #expect(early.issues.first?.path.description == "content")
        // Saying so: a definition is there, only later than the time the send is judged at (a replay's is the event's).
        #expect(early.issues.first?.reason == "required: the event has no content and campaign 'c-1' was defined only at 2026-11-19T00:00:00Z, after 2026-11-18T00:00:00Z, the time the send is judged at")
        guard case .rejected(_, let versionLater) = processor.process(event(#","campaignVersion":2"#, content: nil), sourcePosition: "t/0@0", campaigns: table, decisionTime: time("2026-11-19T00:30:00Z")) else {
            Issue.record("expected version 2 to be rejected before its definition")
            return
        }
        #expect(versionLater.issues.first?.reason.contains("version 2 of campaign 'c-1' was defined only at 2026-11-19T01:00:00Z") == true, "\(versionLater.issues)")
    }

    /// The content was written for the campaign's template: rendered with another, it makes another notification
    /// (here a timer campaign sent as basic would lose its countdown).
    @Test("a send by reference naming another template than its campaign's definition is rejected at template; an alias is the same template")
    func sendByReferenceWithAnotherTemplate() throws {
        var table = CampaignTable()
        try table.apply(json: Array(#"{"type":"campaign.defined","campaignId":"c-1","version":1,"template":"timer","occurredAt":"2026-11-19T00:00:00Z","content":{"title":"t","body":"b","alternate":{"title":"over"},"timer":{"durationSeconds":600}}}"#.utf8))
        try table.apply(json: Array(#"{"type":"campaign.defined","campaignId":"c-2","version":1,"template":"carousel","occurredAt":"2026-11-19T00:00:00Z","content":{"title":"t","body":"b","items":[{"image":"https://e.com/1.png","text":"1"},{"image":"https://e.com/2.png","text":"2"},{"image":"https://e.com/3.png","text":"3"}]}}"#.utf8))
        let now = time("2026-11-20T10:00:00Z")
        guard case .rejected(_, let error) = processor.process(event("", content: nil, template: "basic"), sourcePosition: "t/0@0", campaigns: table, decisionTime: now) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(error.issues.map(\.description) == ["template: 'basic' is not the template of campaign 'c-1' version 1, 'timer', whose content the event renders"])
        guard case .deliver = processor.process(event("", content: nil, template: "timer"), sourcePosition: "t/0@0", campaigns: table, decisionTime: now) else {
            Issue.record("expected the campaign's own template to deliver")
            return
        }
        let alias = Array(String(decoding: event("", content: nil, template: "car"), as: UTF8.self).replacingOccurrences(of: "\"c-1\"", with: "\"c-2\"").utf8)
        guard case .deliver = processor.process(alias, sourcePosition: "t/0@0", campaigns: table, decisionTime: now) else {
            Issue.record("expected 'car' to render a carousel campaign")
            return
        }
    }

    @Test("a timer whose end has passed is not sent: it expires with cause timer")
    func endedTimer() {
        let content = #"{"title":"t","body":"b","alternate":{"title":"over"},"timer":{"endsAt":"2026-11-20T11:00:00Z"}}"#
        let bytes = event("", content: content, template: "timer")
        guard case .expired(let identity, .timer, _) = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: time("2026-11-20T11:00:01Z")) else {
            Issue.record("expected timer expiry")
            return
        }
        // The identity every other outcome of this event carries: the canonical template id and the message id.
        #expect(identity == MessageIdentity(messageId: MessageID.make(eventId: "e-1", platform: .fcm), eventId: "e-1", campaignId: "c-1", recipientId: "u-1", platform: .fcm, template: "timer"))
        guard case .deliver(_, let timer) = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: time("2026-11-20T10:30:00Z")) else {
            Issue.record("expected delivery before the end")
            return
        }
        #expect(timer == .endsAt(time("2026-11-20T11:00:00Z")))
    }

    /// A campaign with a fixed end time keeps getting sends after it: they expire, they are not broken events.
    @Test("a timer that ended before the event was made expires with cause timer, as one that ended before processing")
    func timerEndedBeforeTheEvent() {
        let content = #"{"title":"t","body":"b","alternate":{"title":"over"},"timer":{"endsAt":"2026-11-20T09:59:00Z"}}"#
        let bytes = event("", content: content, template: "timer")
        // Found by review: also at a decision instant before the event's `occurredAt` (10:00:00 here), which a batch
        // judged at the instant of a read just before it gets, or a producer whose clock is ahead.
        for decisionTime in [time("2026-11-20T10:05:00Z"), nil, time("2026-11-20T09:58:30Z")] {
            guard case .expired(_, .timer, _) = processor.process(bytes, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: decisionTime) else {
                Issue.record("expected a timer expiry at \(String(describing: decisionTime))")
                return
            }
        }
    }

    /// Found by review: an event rejected while its envelope was read named the alias it used (`car`), every other
    /// outcome the template's id (`carousel`), splitting one template in two in the analytics.
    @Test("a rejected event names its template by id, whichever name it used, also when its envelope is wrong")
    func rejectedEventsNameTheTemplateById() {
        let noToken = Array(#"{"eventId":"e-1","occurredAt":"2026-11-20T10:00:00Z","campaignId":"c-1","template":"car","recipient":{"id":"u-1","platform":"fcm"},"content":{"title":"t","body":"b"}}"#.utf8)
        guard case .rejected(let identity, let error) = processor.process(noToken, sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: nil) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(error.issues.first?.path.description == "recipient.token")
        #expect(identity.template == "carousel")
        guard case .rejected(let unknown, _) = processor.process(event("", template: "banner"), sourcePosition: "t/0@0", campaigns: CampaignTable(), decisionTime: nil) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(unknown.template == "banner", "an unknown name stays as given")
    }

    @Test("unreadable bytes are rejected with a message id derived from the record's position")
    func unreadable() {
        guard case .rejected(let identity, let error) = processor.process(Array("{not json".utf8), sourcePosition: "s/3@17", campaigns: CampaignTable(), decisionTime: nil) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(error.code == .invalidJSON)
        #expect(identity.eventId == nil)
        let again = processor.process(Array("{not json".utf8), sourcePosition: "s/3@17", campaigns: CampaignTable(), decisionTime: nil)
        let elsewhere = processor.process(Array("{not json".utf8), sourcePosition: "s/3@18", campaigns: CampaignTable(), decisionTime: nil)
        guard case .rejected(let againIdentity, _) = again, case .rejected(let elsewhereIdentity, _) = elsewhere else {
            Issue.record("expected rejections: \(again), \(elsewhere)")
            return
        }
        #expect(againIdentity.messageId == identity.messageId, "deterministic")
        #expect(elsewhereIdentity.messageId != identity.messageId, "the same bytes at another offset are another event")
    }
}
