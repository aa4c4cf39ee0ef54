import TestSupport
import BasicTemplate
import Foundation
import PipelineCore
import Testing

@Suite("Basic template: golden payloads from the specification")
struct BasicGoldenTests {
    let registry = TemplateRegistry([BasicTemplate()])

    /// The seed's FCM `adb_act` is not valid JSON (a `},` is missing between the two buttons).
    /// The documented transformation: insert that `},`, then compare the decoded arrays.
    static func repairedSeedButtons(_ seedAct: String) throws -> JSONValue {
        let repaired = seedAct.replacingOccurrences(of: "\"type\":\"DEEPLINK\"{", with: "\"type\":\"DEEPLINK\"},{")
        #expect(repaired != seedAct, "the seed's adb_act defect is no longer where the repair expects it")
        return try JSONValue(parsing: Array(repaired.utf8))
    }

    @Test func fcmMatchesSeedExample() throws {
        let notification = try #require(renderExpectingSuccess(registry, try Fixtures.sample("basic-fcm")))
        let actual = try JSONValue(parsing: notification.payloadBytes)
        let seed = try Fixtures.seed("basic-fcm")
        let dataPath = ["message", "data", "adb_act"]

        let seedAct = try #require(seed.at(dataPath)?.stringValue)
        #expect((try? JSONValue(parsing: Array(seedAct.utf8))) == nil, "the seed's adb_act is expected to be malformed")
        let actualAct = try #require(actual.at(dataPath)?.stringValue)
        #expect(try JSONValue(parsing: Array(actualAct.utf8)) == Self.repairedSeedButtons(seedAct))

        #expect(actual.setting(dataPath, to: nil) == seed.setting(dataPath, to: nil))
        #expect(notification.warnings.isEmpty, "\(notification.warnings)")
        #expect(notification.headers.isEmpty)
    }

    @Test func apnsMatchesSeedExample() throws {
        let notification = try #require(renderExpectingSuccess(registry, try Fixtures.sample("basic-apns")))
        #expect(try JSONValue(parsing: notification.payloadBytes) == Fixtures.seed("basic-apns"))
        #expect(notification.headers == [Header("apns-push-type", "alert")])
        #expect(notification.token == "APNS_DEVICE_TOKEN")
    }

    @Test func renderingIsByteIdentical() throws {
        let event = try Fixtures.sample("basic-fcm")
        let first = try #require(renderExpectingSuccess(registry, event))
        let second = try #require(renderExpectingSuccess(registry, event))
        #expect(first.payloadBytes == second.payloadBytes)
        #expect(first.messageId == second.messageId)
    }

    /// `templates` lists what the template reads: every listed field is in a sample and read, every key of the samples
    /// is listed (the samples, plus the listed fields they leave out).
    @Test func fieldsListWhatRenderReads() throws {
        let contents = try ["basic-fcm", "basic-apns"].map { try Fixtures.sampleContent($0) } + [
            try Fixtures.sampleContent("basic-apns", adding: [
                "subtitle": "s", "threadId": "t", "icon": "ic_legacy",
            ]),
        ]
        #expect(templateFieldListingProblems(of: BasicTemplate(), contents: contents) == [])
    }
}

@Suite("Basic template: validation rules")
struct BasicValidationTests {
    let registry = TemplateRegistry([BasicTemplate()])

    static let twoButtons: JSONValue = [
        ["label": "a", "uri": "https://x.test", "type": "WEBURL"],
        ["label": "b", "type": "DISMISS"],
    ]
    static let threeButtons: JSONValue = [
        ["label": "a", "uri": "https://x.test", "type": "WEBURL"],
        ["label": "b", "type": "DISMISS"],
        ["label": "c", "type": "OPENAPP"],
    ]
    static let fourButtons: JSONValue = [
        ["label": "a", "type": "OPENAPP"], ["label": "b", "type": "OPENAPP"],
        ["label": "c", "type": "OPENAPP"], ["label": "d", "type": "OPENAPP"],
    ]

    static let cases: [RuleCase] = [
        RuleCase("title is required", "basic-fcm", [(["content", "title"], nil)], path: "content.title", code: .missingField),
        RuleCase("image is a URL", "basic-fcm", [(["content", "image"], "/img/board.png")], path: "content.image", code: .invalidField),
        RuleCase("image is an http(s) URL", "basic-apns", [(["content", "image"], "file:///img/board.png")], path: "content.image", code: .invalidField),
        RuleCase("image is a URL once personalized", "basic-apns", [(["content", "image"], "img/{{name}}.png"), (["recipient", "attributes"], ["name": "board"])], path: "content.image", code: .invalidField),
        RuleCase("body is required (APNs)", "basic-apns", [(["content", "body"], nil)], path: "content.body", code: .missingField),
        RuleCase("title must be a string", "basic-fcm", [(["content", "title"], 42)], path: "content.title", code: .invalidField),
        RuleCase("title must not be empty", "basic-apns", [(["content", "title"], "")], path: "content.title", code: .invalidField),
        RuleCase("no buttons is not allowed", "basic-fcm", [(["content", "buttons"], [])], path: "content.buttons", code: .invalidField),
        RuleCase("at most three buttons", "basic-fcm", [(["content", "buttons"], fourButtons), (["content", "remindLater"], nil)], path: "content.buttons", code: .invalidField),
        RuleCase("at most two buttons with remind-later", "basic-fcm", [(["content", "buttons"], threeButtons)], path: "content.buttons", code: .invalidField),
        RuleCase("button label is required", "basic-fcm", [(["content", "buttons"], [["type": "OPENAPP"]])], path: "content.buttons[0].label", code: .missingField),
        RuleCase("button type is required", "basic-fcm", [(["content", "buttons"], [["label": "x", "uri": "https://x.test"]])], path: "content.buttons[0].type", code: .missingField),
        RuleCase("button type is one of four", "basic-fcm", [(["content", "buttons"], [["label": "x", "uri": "https://x.test", "type": "weburl"]])], path: "content.buttons[0].type", code: .invalidField),
        RuleCase("WEBURL button needs a uri", "basic-fcm", [(["content", "buttons"], [["label": "x", "type": "WEBURL"]])], path: "content.buttons[0].uri", code: .missingField),
        RuleCase("button must be an object", "basic-fcm", [(["content", "buttons"], ["accept"])], path: "content.buttons[0]", code: .invalidField),
        RuleCase("remind-later needs its time", "basic-fcm", [(["content", "remindLater", "at"], nil)], path: "content.remindLater.at", code: .missingField),
        RuleCase("remind-later needs its label", "basic-fcm", [(["content", "remindLater", "label"], nil)], path: "content.remindLater.label", code: .missingField),
        RuleCase("remind-later time is RFC 3339", "basic-fcm", [(["content", "remindLater", "at"], "tomorrow")], path: "content.remindLater.at", code: .invalidField),
        RuleCase("remind-later time is after occurredAt", "basic-fcm", [(["content", "remindLater", "at"], "2023-12-01T00:00:00Z")], path: "content.remindLater.at", code: .invalidField),
        RuleCase("link type is required on FCM when a uri is set", "basic-fcm", [(["content", "link", "type"], nil)], path: "content.link.type", code: .missingField),
        RuleCase("link type is one of four", "basic-apns", [(["content", "link", "type"], "OPEN")], path: "content.link.type", code: .invalidField),
        RuleCase("link needs a uri", "basic-fcm", [(["content", "link"], ["type": "WEBURL"])], path: "content.link.uri", code: .missingField),
        RuleCase("colour is six hex digits", "basic-fcm", [(["content", "colors", "title"], "GGGGGG")], path: "content.colors.title", code: .invalidField),
        RuleCase("eight-digit colours are rejected", "basic-fcm", [(["content", "colors", "body"], "FF00EE00")], path: "content.colors.body", code: .invalidField),
        RuleCase("badge is an integer", "basic-fcm", [(["content", "badge"], "1")], path: "content.badge", code: .invalidField),
        RuleCase("badge is not negative", "basic-apns", [(["content", "badge"], -1)], path: "content.badge", code: .invalidField),
        RuleCase("sticky is a boolean", "basic-fcm", [(["content", "sticky"], "true")], path: "content.sticky", code: .invalidField),
        RuleCase("notification priority is an SDK value", "basic-fcm", [(["content", "notificationPriority"], "LOW")], path: "content.notificationPriority", code: .invalidField),
        RuleCase("title empty once personalized", "basic-fcm", [(["content", "title"], "{{first}}")], path: "content.title", code: .invalidField),
        RuleCase("body empty once personalized (APNs)", "basic-apns", [(["content", "body"], "{{first}}{{last}}")], path: "content.body", code: .invalidField),
        RuleCase("title empty once a Mustache section is filled", "basic-apns", [(["content", "title"], "{{#first}}\n{{/first}}")], path: "content.title", code: .invalidField),
        RuleCase("button label empty once personalized", "basic-fcm", [(["content", "buttons"], [["label": "{{first}}", "type": "OPENAPP"]])], path: "content.buttons[0].label", code: .invalidField),
        RuleCase("remind-later label empty once personalized", "basic-fcm", [(["content", "remindLater", "label"], "{{first}}")], path: "content.remindLater.label", code: .invalidField),
        RuleCase("link uri empty once personalized", "basic-fcm", [(["content", "link", "uri"], "{{deepLink}}")], path: "content.link.uri", code: .invalidField),
        RuleCase("oversized payload is rejected (FCM)", "basic-fcm", [(["content", "expandedBody"], .string(String(repeating: "x", count: 5000)))], path: "content", code: .payloadTooLarge),
        RuleCase("oversized payload is rejected (APNs)", "basic-apns", [(["content", "expandedBody"], .string(String(repeating: "é", count: 2100)))], path: "content", code: .payloadTooLarge),
    ]

    @Test(arguments: cases)
    func rule(_ rule: RuleCase) throws {
        try rule.check(registry)
    }

    @Test func everyProblemIsReportedAtOnce() throws {
        let event = try Fixtures.sample("basic-fcm")
            .setting(["content", "title"], to: nil)
            .setting(["content", "colors", "title"], to: "red")
            .setting(["content", "buttons"], to: Self.fourButtons)
        let error = try #require(renderExpectingFailure(registry, event))
        #expect(error.code == .validationFailed)
        #expect(error.eventId == "00000000-0000-4000-8000-000000000001")
        let paths = Set(error.issues.map { "\($0.path)" })
        #expect(paths.isSuperset(of: ["content.title", "content.colors.title", "content.buttons"]))
    }

    @Test func colourWithHashIsEmittedWithout() throws {
        let event = try Fixtures.sample("basic-fcm").setting(["content", "colors", "title"], to: "#AABBCC")
        let notification = try #require(renderExpectingSuccess(registry, event))
        let payload = try JSONValue(parsing: notification.payloadBytes)
        #expect(payload.at(["message", "data", "adb_clr_title"]) == "AABBCC")
    }

    @Test func twoButtonsWithRemindLaterAreAccepted() throws {
        let event = try Fixtures.sample("basic-fcm").setting(["content", "buttons"], to: Self.twoButtons)
        let notification = try #require(renderExpectingSuccess(registry, event))
        let act = try #require(try JSONValue(parsing: notification.payloadBytes).at(["message", "data", "adb_act"])?.stringValue)
        #expect(try JSONValue(parsing: Array(act.utf8)) == [
            ["label": "a", "uri": "https://x.test", "type": "WEBURL"],
            ["label": "b", "uri": "", "type": "DISMISS"],
        ])
    }

    @Test func longTitleIsAWarningNotAnError() throws {
        let title = String(repeating: "t", count: 36)
        let event = try Fixtures.sample("basic-fcm").setting(["content", "title"], to: .string(title))
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(notification.warnings.map(\.description) == ["content.title: 36 characters; the fcm guideline is at most 35"])
        let apns = try Fixtures.sample("basic-apns").setting(["content", "title"], to: .string(title))
        #expect(try #require(renderExpectingSuccess(registry, apns)).warnings.isEmpty)
    }

    /// The phone downloads the image: an address it cannot download is an invalid field (above), plain http a warning,
    /// and one whose scheme comes from the recipient's attributes is taken as it is filled.
    @Test func imageAddresses() throws {
        for (image, warnings) in [
            ("HTTPS://IMG.TEST/board.png", [String]()),
            ("http://img.test/board.png", ["content.image: plain http: iOS (App Transport Security) and Android 9 and later refuse it unless the app allows it"]),
            ("https://{{cdn}}/board.png", []),
        ] {
            let event = try Fixtures.sample("basic-fcm")
                .setting(["content", "image"], to: .string(image))
                .setting(["recipient", "attributes"], to: ["cdn": "cdn.test"])
            let notification = try #require(renderExpectingSuccess(registry, event), "\(image)")
            #expect(notification.warnings.map(\.description) == warnings, "\(image)")
        }
        let filled = try Fixtures.sample("basic-apns")
            .setting(["content", "image"], to: "{{hero}}")
            .setting(["recipient", "attributes"], to: ["hero": "https://cdn.test/hero.png"])
        let payload = try JSONValue(parsing: try #require(renderExpectingSuccess(registry, filled)).payloadBytes)
        #expect(payload.at(["adb_media"]) == "https://cdn.test/hero.png")
        // An escaped text is judged as it reads: `https:\/\/` is `https://`.
        let escapedEvent = #"{"specVersion":"1","type":"push.requested","eventId":"e","occurredAt":"2023-12-20T10:00:00Z","campaignId":"c","template":"basic","recipient":{"id":"r","platform":"apns","token":"t"},"content":{"title":"t","body":"b","image":"https:\/\/img.test\/a.png"}}"#
        guard case .rendered(let escaped) = registry.render(eventBytes: Array(escapedEvent.utf8)) else {
            Issue.record("an escaped https URL is an image address")
            return
        }
        #expect(try JSONValue(parsing: escaped.payloadBytes).at(["adb_media"]) == "https://img.test/a.png")
        // The detail quotes the event's text, not the recipient's attributes filled in.
        let personalized = try Fixtures.sample("basic-fcm")
            .setting(["content", "image"], to: "img/{{name}}.png")
            .setting(["recipient", "attributes"], to: ["name": "secret"])
        #expect(try #require(renderExpectingFailure(registry, personalized)).issues.map(\.description) == [
            "content.image: must be an absolute http or https URL (the phone downloads the image), found 'img/{{name}}.png'"
        ])
        // The detail quotes what was given, cut at 100 characters.
        let long = try Fixtures.sample("basic-fcm").setting(["content", "image"], to: .string(String(repeating: "x", count: 300)))
        let error = try #require(renderExpectingFailure(registry, long))
        #expect(error.issues.map(\.description) == [
            "content.image: must be an absolute http or https URL (the phone downloads the image), found '\(String(repeating: "x", count: 100))…'"
        ])
    }

    @Test func fcmExpandedBodyDefaultsToBody() throws {
        let event = try Fixtures.sample("basic-fcm").setting(["content", "expandedBody"], to: nil)
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["message", "data", "adb_body_ex"]) == "shall we play a game?")
        let apns = try Fixtures.sample("basic-apns").setting(["content", "expandedBody"], to: nil)
        #expect(try JSONValue(parsing: try #require(renderExpectingSuccess(registry, apns)).payloadBytes).at(["adb_body_ex"]) == nil)
    }

    /// The SDKs fall back to another key only when one is absent (iOS: the expanded title is `adb_title_ex ??` the
    /// title; Android's expanded layout shows only `adb_body_ex`): an optional text empty as given or once
    /// personalized is left out, so the expanded notification shows the title and the body. Both were written as
    /// `""`, and shown empty (found by review against the SDK parsers).
    @Test func emptyOptionalTextsAreLeftOut() throws {
        let fcm = try Fixtures.sample("basic-fcm").setting(["content", "expandedBody"], to: "{{promo}}")
        let fcmNotification = try #require(renderExpectingSuccess(registry, fcm))
        #expect(try JSONValue(parsing: fcmNotification.payloadBytes).at(["message", "data", "adb_body_ex"]) == "shall we play a game?")
        #expect(fcmNotification.warnings.map(\.description).contains("content.expandedBody: empty once personalized; left out, as if absent"))
        let apns = try Fixtures.sample("basic-apns").setting(["content", "expandedTitle"], to: "").setting(["content", "expandedBody"], to: "{{promo}}")
        let payload = try JSONValue(parsing: try #require(renderExpectingSuccess(registry, apns)).payloadBytes)
        #expect(payload.at(["adb_title_ex"]) == nil && payload.at(["adb_body_ex"]) == nil, "\(payload)")
        // An empty channel id was refused; left out, the SDK uses its default channel.
        let channel = try Fixtures.sample("basic-fcm").setting(["content", "channelId"], to: "")
        #expect(try JSONValue(parsing: try #require(renderExpectingSuccess(registry, channel)).payloadBytes).at(["message", "data", "adb_channel_id"]) == nil)
    }

    @Test func versionDefaultsToOne() throws {
        let event = try Fixtures.sample("basic-apns").setting(["content", "version"], to: nil)
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["adb_version"]) == "1")
    }

    @Test func iconBesideSmallIconIsAWarning() throws {
        let event = try Fixtures.sample("basic-fcm").setting(["content", "icon"], to: "ic_other")
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(notification.warnings.map(\.description) == ["content.icon: ignored by the Android SDK when smallIcon is set"])
    }

    @Test func campaignClassicTrackingKeysPassThroughCustom() throws {
        let event = try Fixtures.sample("basic-fcm").setting(["custom"], to: ["_mId": "m-1", "_dId": "d-1"])
        let notification = try #require(renderExpectingSuccess(registry, event))
        let data = try JSONValue(parsing: notification.payloadBytes).at(["message", "data"])
        #expect(data?.at(["_mId"]) == "m-1")
        #expect(data?.at(["_dId"]) == "d-1")
    }

    @Test func unknownContentFieldIsAWarning() throws {
        let event = try Fixtures.sample("basic-apns").setting(["content", "titel"], to: "typo")
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(notification.warnings.map(\.description) == ["content.titel: not a field of template 'basic'; ignored"])
    }
}
