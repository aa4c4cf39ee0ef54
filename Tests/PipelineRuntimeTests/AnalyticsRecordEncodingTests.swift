import PipelineCore
@testable import PipelineRuntime
import TestSupport
import Testing

@Suite("Analytics and timer records: the exact bytes written")
struct AnalyticsRecordEncodingTests {
    static let identity = MessageIdentity(
        messageId: "6f1c2a4e-0000-5000-8000-000000000001",
        eventId: "evt-\"quoted\"",
        campaignId: "spring-sale",
        recipientId: "user-42",
        platform: .apns,
        template: "timer"
    )
    static let at = try! Timestamp(rfc3339: "2026-03-01T12:00:00Z")

    @Test("every kind of analytics event")
    func analyticsEvents() throws {
        let partial = MessageIdentity(messageId: "m-1", eventId: nil, campaignId: nil, recipientId: nil, platform: nil, template: "unknown")
        let cases: [(AnalyticsEvent, String)] = [
            (AnalyticsEvent(kind: .delivered, identity: Self.identity, occurredAt: Self.at, sink: "kafka:push.apns"), #"{"specVersion":"1","type":"push.delivered","messageId":"6f1c2a4e-0000-5000-8000-000000000001","sourceEventId":"evt-\"quoted\"","campaignId":"spring-sale","recipientId":"user-42","platform":"apns","template":"timer","occurredAt":"2026-03-01T12:00:00Z","sink":"kafka:push.apns"}"#),
            (AnalyticsEvent(kind: .failed, identity: Self.identity, occurredAt: Self.at, sink: "apns:production", reasonCode: "invalid_token", reasonDetail: "Unregistered\n410"), #"{"specVersion":"1","type":"push.failed","messageId":"6f1c2a4e-0000-5000-8000-000000000001","sourceEventId":"evt-\"quoted\"","campaignId":"spring-sale","recipientId":"user-42","platform":"apns","template":"timer","occurredAt":"2026-03-01T12:00:00Z","sink":"apns:production","reason":{"code":"invalid_token","detail":"Unregistered\n410"}}"#),
            (AnalyticsEvent(kind: .rejected, identity: partial, occurredAt: Self.at, reasonCode: "missing_field", reasonDetail: nil), #"{"specVersion":"1","type":"push.rejected","messageId":"m-1","template":"unknown","occurredAt":"2026-03-01T12:00:00Z","reason":{"code":"missing_field"}}"#),
            (AnalyticsEvent(kind: .expired, identity: Self.identity, occurredAt: Self.at, cause: .timer), #"{"specVersion":"1","type":"push.expired","messageId":"6f1c2a4e-0000-5000-8000-000000000001","sourceEventId":"evt-\"quoted\"","campaignId":"spring-sale","recipientId":"user-42","platform":"apns","template":"timer","occurredAt":"2026-03-01T12:00:00Z","cause":"timer"}"#),
            (AnalyticsEvent(kind: .suppressed, identity: Self.identity, occurredAt: Self.at), #"{"specVersion":"1","type":"push.suppressed","messageId":"6f1c2a4e-0000-5000-8000-000000000001","sourceEventId":"evt-\"quoted\"","campaignId":"spring-sale","recipientId":"user-42","platform":"apns","template":"timer","occurredAt":"2026-03-01T12:00:00Z"}"#),
        ]
        for (event, expected) in cases {
            #expect(String(decoding: event.encoded(), as: UTF8.self) == expected)
            #expect(try AnalyticsEvent(json: event.encoded()) == event, "reads back")
        }
    }

    @Test("an analytics event's time is written to the millisecond")
    func occurredAtInMilliseconds() throws {
        let at = Timestamp(secondsSince1970: 1_772_366_400, nanoseconds: 127_336_106)
        let record = try JSONValue(parsing: AnalyticsEvent(kind: .suppressed, identity: Self.identity, occurredAt: at).encoded())
        #expect(record.at(["occurredAt"]) == "2026-03-01T12:00:00.127Z")
        #expect(Timestamp(secondsSince1970: 5, nanoseconds: 999_999).truncatedToMilliseconds == Timestamp(secondsSince1970: 5))
    }

    @Test("a timer record")
    func timerRecord() {
        let timer = TimerBook.PendingTimer(identity: Self.identity, expiresAt: Self.at, partition: 3)
        #expect(String(decoding: TimerBook.encode(timer), as: UTF8.self) == #"{"messageId":"6f1c2a4e-0000-5000-8000-000000000001","sourceEventId":"evt-\"quoted\"","campaignId":"spring-sale","recipientId":"user-42","platform":"apns","template":"timer","expiresAt":"2026-03-01T12:00:00Z"}"#)
        #expect(TimerBook.decode(TimerBook.encode(timer), partition: 3) == timer)
        // Only the message id and the expiry are required; anything else is not a timer record.
        let bare = TimerBook.decode(Array(#"{"expiresAt":"2026-03-01T12:00:00Z","messageId":"m-1","platform":"web"}"#.utf8), partition: 0)
        #expect(bare == TimerBook.PendingTimer(identity: MessageIdentity(messageId: "m-1", eventId: nil, campaignId: nil, recipientId: nil, platform: nil, template: nil), expiresAt: Self.at, partition: 0))
        for text in [#"{"messageId":"m-1"}"#, #"{"messageId":"m-1","expiresAt":"soon"}"#, #"{"messageId":7,"expiresAt":"2026-03-01T12:00:00Z"}"#, #"["messageId"]"#, #"{"messageId":"m-1","#, ""] {
            #expect(TimerBook.decode(Array(text.utf8), partition: 0) == nil, "\(text)")
        }
    }

    @Test("a reason's detail is cut to its limit at a character boundary, saying how long it was; a short one is kept")
    func detailIsBounded() {
        #expect(AnalyticsEvent.boundedDetail("content.title: required") == "content.title: required")
        let exact = String(repeating: "x", count: AnalyticsEvent.detailLimit)
        #expect(AnalyticsEvent.boundedDetail(exact) == exact)
        let long = String(repeating: "é", count: 5_000)  // two bytes each
        let cut = AnalyticsEvent.boundedDetail(long)
        #expect(cut.utf8.count <= AnalyticsEvent.detailLimit)
        #expect(cut.hasSuffix(" … (cut: 10000 bytes in all)"))
        #expect(cut.hasPrefix(String(repeating: "é", count: 900)))
        #expect(!cut.unicodeScalars.contains("\u{FFFD}"))
        let record = AnalyticsEvent.encode(
            kind: .rejected,
            identity: Self.identity,
            occurredAt: Self.at,
            reasonCode: "invalid_field",
            reasonDetail: long
        )
        #expect(record.count < AnalyticsEvent.detailLimit + 500, "the record carries the cut detail")
    }

    @Test("a record refused for its size is written again with each long text cut, its members in order")
    func longTextsAreCut() throws {
        let short = AnalyticsEvent.encode(kind: .delivered, identity: Self.identity, occurredAt: Self.at, sink: "kafka:push.apns")
        #expect(AnalyticsEvent.withLongTextsCut(short) == nil, "nothing to cut")
        var identity = Self.identity
        identity.campaignId = String(repeating: "c", count: 100_000)
        let long = AnalyticsEvent.encode(
            kind: .failed,
            identity: identity,
            occurredAt: Self.at,
            sink: "fcm:p",
            reasonCode: "invalid_token",
            reasonDetail: "x"
        )
        let cut = try #require(AnalyticsEvent.withLongTextsCut(long))
        #expect(cut.count < AnalyticsEvent.detailLimit + 500)
        let original = try JSONValue(parsing: long)
        let written = try JSONValue(parsing: cut)
        #expect(written.objectValue?.keys == original.objectValue?.keys, "the same members, in the same order")
        let campaignId = try #require(written.at(["campaignId"])?.stringValue)
        #expect(campaignId.hasSuffix(" … (cut: 100000 bytes in all)") && campaignId.utf8.count <= AnalyticsEvent.detailLimit)
        #expect(written.at(["reason"]) == original.at(["reason"]), "short texts, nested too, are kept")
        #expect(written.at(["messageId"]) == original.at(["messageId"]))

        // A detail, bounded already, is left as it is; texts in arrays are cut too.
        let bounded = AnalyticsEvent.encode(
            kind: .rejected,
            identity: Self.identity,
            occurredAt: Self.at,
            reasonCode: "invalid_field",
            reasonDetail: String(repeating: "d", count: 10_000)
        )
        #expect(AnalyticsEvent.withLongTextsCut(bounded) == nil)
        let array = try #require(AnalyticsEvent.withLongTextsCut(Array(#"{"a":["x","\#(String(repeating: "y", count: 5_000))"]}"#.utf8)))
        let elements = try #require(try JSONValue(parsing: array).at(["a"])?.arrayValue)
        #expect(elements.first == "x" && elements.last?.stringValue?.hasSuffix("(cut: 5000 bytes in all)") == true)
    }
}
