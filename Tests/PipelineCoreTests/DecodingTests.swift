@testable import PipelineCore
import Foundation
import Testing

@Suite("push.requested decoding")
struct DecodingTests {
    let registry = TemplateRegistry([NoteTemplate()])

    func failure(_ json: String) -> PipelineError? {
        if case .failed(let error) = registry.render(eventBytes: Array(json.utf8)) { return error }
        Issue.record("expected a failure for \(json)")
        return nil
    }

    @Test func decodesTheContractExample() throws {
        let json = eventJSON(options: #"{"collapseKey":"new message","priority":"high","ttlSeconds":3600}"#, custom: #"{"k":"v"}"#)
        let request = try PushRequest(json: Array(json.utf8))
        #expect(request.eventId == "evt-1")
        #expect(request.occurredAt == Timestamp(secondsSince1970: 1_795_168_800))
        #expect(request.recipient == Recipient(id: "user-42", platform: .fcm, token: "TOKEN", attributes: ["name": "Ada"]))
        #expect(request.options == DeliveryOptions(collapseKey: "new message", priority: .high, ttl: .seconds(3600)))
        #expect(request.custom == ["k": "v"])
        #expect(request.content?.fields == ["title": "Hello", "body": "World"])
    }

    @Test("a request is a value: changing a copy, nested fields too, leaves the original as it was")
    func requestCopiesAreIndependent() throws {
        let original = try PushRequest(json: Array(eventJSON(custom: #"{"k":"v"}"#).utf8))
        var copy = original
        copy.recipient.token = "OTHER"
        copy.options.collapseKey = "ck"
        copy.custom["k"] = "changed"
        copy.eventId = "evt-2"
        #expect(original.recipient.token == "TOKEN")
        #expect(original.options.collapseKey == nil)
        #expect(original.custom == ["k": "v"])
        #expect(original.eventId == "evt-1")
        #expect(copy.recipient.token == "OTHER")
        #expect(copy.options.collapseKey == "ck")
        #expect(copy.custom == ["k": "changed"])
        #expect(copy.eventId == "evt-2")
        // with(content:) changes only the copy it returns.
        let other = original.with(content: nil)
        #expect(other.content == nil)
        #expect(original.content?.fields == ["title": "Hello", "body": "World"])
    }

    static let envelopeCases: [(json: String, path: String, code: PipelineError.Code)] = [
        (eventJSON().replacingFirst(#""eventId":"evt-1","#, with: ""), "eventId", .missingField),
        (eventJSON(eventId: "x").replacingFirst(#""campaignId":"spring","#, with: ""), "campaignId", .missingField),
        (eventJSON().replacingFirst(#""occurredAt":"2026-11-20T10:00:00Z""#, with: #""occurredAt":1795168800"#), "occurredAt", .invalidField),
        (eventJSON().replacingFirst(#""occurredAt":"2026-11-20T10:00:00Z""#, with: #""occurredAt":"2026-11-31T10:00:00Z""#), "occurredAt", .invalidField),
        (eventJSON(platform: "web"), "recipient.platform", .invalidField),
        (eventJSON().replacingFirst(#""token":"TOKEN","#, with: ""), "recipient.token", .missingField),
        (eventJSON(attributes: #"{"name":42}"#), "recipient.attributes.name", .invalidField),
        (eventJSON(options: #"{"priority":"urgent"}"#), "options.priority", .invalidField),
        (eventJSON(options: #"{"ttlSeconds":-1}"#), "options.ttlSeconds", .invalidField),
        (eventJSON(options: #"{"ttlSeconds":"1h"}"#), "options.ttlSeconds", .invalidField),
        (eventJSON(content: "[]"), "content", .invalidField),
        (eventJSON(custom: #"{"n":1}"#), "custom.n", .invalidField),
        (eventJSON(custom: #"{"adb_title":"x"}"#), "custom", .invalidField),
        (eventJSON().replacingFirst(#""type":"push.requested""#, with: #""type":"campaign.defined""#), "type", .invalidField),
        (eventJSON().replacingFirst(#""specVersion":"1""#, with: #""specVersion":"2""#), "specVersion", .invalidField),
        // Empty, they are not absent (an empty optional content text is; found by review of that change).
        (eventJSON().replacingFirst(#""type":"push.requested""#, with: #""type":"""#), "type", .invalidField),
        (eventJSON().replacingFirst(#""specVersion":"1""#, with: #""specVersion":"""#), "specVersion", .invalidField),
        (eventJSON(template: "banner"), "template", .unknownTemplate),
        (eventJSON(content: nil), "content", .missingField),
        ("[1]", "$", .invalidField),
        (#"{"eventId":"e""#, "$", .invalidJSON),
    ]

    @Test(arguments: 0..<envelopeCases.count)
    func envelopeRule(_ index: Int) throws {
        let (json, path, code) = Self.envelopeCases[index]
        let error = try #require(failure(json))
        #expect(error.issues.contains { "\($0.path)" == path && $0.code == code }, "\(error.issues)")
    }

    /// Every value of a string map that is not a string is reported, read in place or from a tree, in member order.
    @Test func everyNonStringValueOfAStringMapIsReported() throws {
        let json = eventJSON(attributes: #"{"a":1,"b":"x","c":true}"#, custom: #"{"k":null,"l":"v","m":[1]}"#)
        let expected = [
            "recipient.attributes.a: expected a string, found a number",
            "recipient.attributes.c: expected a string, found a boolean",
            "custom.k: expected a string, found null",
            "custom.m: expected a string, found an array",
        ]
        let inPlace = try #require(failure(json))
        #expect(inPlace.issues.map(\.description) == expected)
        guard case .failed(let fromTree) = registry.render(event: try JSONValue(parsing: Array(json.utf8))) else {
            Issue.record("expected a failure")
            return
        }
        #expect(fromTree.issues.map(\.description) == expected)
    }

    @Test func errorsCarryTheEventIdWhenReadable() throws {
        let error = try #require(failure(eventJSON(eventId: "evt-9", platform: "web")))
        #expect(error.eventId == "evt-9")
        #expect(error.description == "evt-9: recipient.platform: unknown platform 'web'; expected fcm or apns")
        let invalid = try #require(failure("{"))
        #expect(invalid.eventId == nil)
        #expect(invalid.code == .invalidJSON)
    }

    @Test func unknownTopLevelKeysAreIgnored() throws {
        let json = eventJSON().replacingFirst("{", with: #"{"futureField":{"x":[1,2]},"#)
        guard case .rendered(let notification) = registry.render(eventBytes: Array(json.utf8)) else {
            Issue.record("should render")
            return
        }
        #expect(notification.warnings.isEmpty)
    }

    @Test func allEnvelopeProblemsAreListed() throws {
        let json = #"{"eventId":"e","occurredAt":"now","template":7,"recipient":{"platform":"sms"}}"#
        let error = try #require(failure(json))
        #expect(error.code == .validationFailed)
        #expect(error.issues.map(\.path.description) == ["occurredAt", "campaignId", "template", "recipient.id", "recipient.platform", "recipient.token"])
    }

    @Test func unknownTemplateNamesTheKnownOnes() throws {
        let registry = TemplateRegistry([NoteTemplate(), ThrowingTemplate()])
        #expect(throws: PipelineError(.unknownTemplate, at: FieldPath("template"), "unknown template 'x'; known: note (n), throws")) {
            try registry.renderer(named: "x")
        }
        #expect(try registry.renderer(named: "n").templateID == "note")
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
