import TestSupport
import PipelineCore
import Testing
import TimerTemplate

@Suite("Timer template: golden payloads from the specification")
struct TimerGoldenTests {
    let registry = TemplateRegistry([TimerTemplate()])

    @Test(arguments: ["timer-fcm", "timer-apns", "timer-apns-full"])
    func matchesSeedExample(_ name: String) throws {
        let notification = try #require(renderExpectingSuccess(registry, try Fixtures.sample(name)))
        #expect(try JSONValue(parsing: notification.payloadBytes) == Fixtures.seed(name))
    }

    @Test func durationWinsOverEndTime() throws {
        let event = try Fixtures.sample("timer-fcm").setting(["content", "timer"], to: ["durationSeconds": 600, "endsAt": "2023-12-25T00:00:00Z"])
        let notification = try #require(renderExpectingSuccess(registry, event))
        let data = try #require(try JSONValue(parsing: notification.payloadBytes).at(["message", "data"])?.objectValue)
        #expect(data["adb_tmr_dur"] == "600")
        #expect(data["adb_tmr_end"] == nil)
        #expect(notification.warnings.map(\.description) == ["content.timer.endsAt: ignored: durationSeconds is set and wins"])
        // An end time that is ignored is not judged either, even one long past.
        let stale = try Fixtures.sample("timer-fcm").setting(["content", "timer"], to: ["durationSeconds": 600, "endsAt": "2023-12-19T00:00:00Z"])
        let rendered = try #require(renderExpectingSuccess(registry, stale))
        #expect(try JSONValue(parsing: rendered.payloadBytes).at(["message", "data", "adb_tmr_dur"]) == "600")
        #expect(rendered.warnings.map(\.description) == ["content.timer.endsAt: ignored: durationSeconds is set and wins"])
    }

    /// Not a broken event: the pipeline expires it (cause timer), as it does a countdown that ended while the event
    /// waited to be processed.
    @Test func endTimeBeforeTheEventRendersWithAWarning() throws {
        let event = try Fixtures.sample("timer-apns-full").setting(["content", "timer"], to: ["endsAt": "2023-12-20T09:59:59Z"])
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["adb_tmr_end"]) == "1703066399")
        #expect(notification.warnings.map(\.description) == [
            "content.timer.endsAt: not after occurredAt (2023-12-20T10:00:00Z): the countdown is over before the event was made"
        ])
    }

    @Test func missingAlternateTextsAreWarnings() throws {
        let fcm = try Fixtures.sample("timer-fcm").setting(["content", "alternate"], to: ["title": "Over"])
        let notification = try #require(renderExpectingSuccess(registry, fcm))
        #expect(notification.warnings.map(\.description) == [
            "content.alternate.body: not set: the notification shows no body once the timer ends"
        ])
        let apns = try Fixtures.sample("timer-apns").setting(["content", "alternate", "body"], to: nil)
        #expect(try #require(renderExpectingSuccess(registry, apns)).warnings.map(\.description) == [
            "content.alternate.body: not set: the notification shows no body once the timer ends",
        ])
    }

    /// iOS shows `adb_media_alt ??` the image once the timer ends: an alternate image empty once personalized is
    /// left out, not written as `""` (no image at all).
    @Test func alternateImageEmptyOncePersonalizedIsLeftOut() throws {
        let event = try Fixtures.sample("timer-apns").setting(["content", "alternate", "image"], to: "{{endedImage}}")
        let payload = try JSONValue(parsing: try #require(renderExpectingSuccess(registry, event)).payloadBytes)
        #expect(payload.at(["adb_media_alt"]) == nil)
        #expect(payload.at(["adb_media"]) == "https://<URL_CONTAINING_INITIAL_IMAGE>")
    }

    /// Android shows only `adb_body_ex_alt` and `adb_image_alt` in its expanded view once the timer ends, with no
    /// fallback: FCM payloads take them from the alternate body and the running image (as `adb_body_ex` is taken from
    /// the body, and as iOS shows the running image). APNs payloads leave `adb_media_alt` out: iOS falls back itself.
    @Test func fcmAlternateExpandedBodyAndImageFallBack() throws {
        let fcm = try Fixtures.sample("timer-fcm").setting(["content", "alternate"], to: ["title": "Over", "body": "See you next month"])
        let notification = try #require(renderExpectingSuccess(registry, fcm))
        #expect(notification.warnings.isEmpty)
        let data = try #require(try JSONValue(parsing: notification.payloadBytes).at(["message", "data"]))
        #expect(data.at(["adb_body_alt"]) == "See you next month")
        #expect(data.at(["adb_body_ex_alt"]) == "See you next month")
        #expect(data.at(["adb_image_alt"]) == "https://bigboxretailer.com/sale.png")
        #expect(data.at(["adb_image"]) == "https://bigboxretailer.com/sale.png")

        // Without a running image there is nothing to fall back to.
        let withoutImage = try #require(renderExpectingSuccess(registry, fcm.setting(["content", "image"], to: nil)))
        #expect(try JSONValue(parsing: withoutImage.payloadBytes).at(["message", "data", "adb_image_alt"]) == nil)

        let apns = try Fixtures.sample("timer-apns").setting(["content", "alternate", "image"], to: nil)
        let payload = try JSONValue(parsing: try #require(renderExpectingSuccess(registry, apns)).payloadBytes)
        #expect(payload.at(["adb_media_alt"]) == nil)
    }

    @Test func goldenSamplesHaveNoWarnings() throws {
        for name in ["timer-fcm", "timer-apns", "timer-apns-full"] {
            #expect(try #require(renderExpectingSuccess(registry, try Fixtures.sample(name))).warnings.isEmpty, "\(name)")
        }
    }

    @Test func endTimeIsEpochSecondsAsAString() throws {
        let event = try Fixtures.sample("timer-apns").setting(["content", "timer"], to: ["endsAt": "2023-12-25T01:00:00+01:00"])
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["adb_tmr_end"]) == "1703462400")
    }

    /// `templates` lists what the template reads: every listed field is in a sample and read, every key of the samples
    /// is listed (the samples, plus the listed fields they leave out).
    @Test func fieldsListWhatRenderReads() throws {
        let contents = try ["timer-fcm", "timer-apns", "timer-apns-full"].map { try Fixtures.sampleContent($0) } + [
            try Fixtures.sampleContent("timer-fcm", adding: [
                "smallIcon": "ic_small", "largeIcon": "https://x.test/l.png", "channelId": "c", "tag": "g", "ticker": "k", "sticky": true,
                "timer": ["durationSeconds": 60, "endsAt": "2023-12-25T00:00:00Z"],
                "alternate": ["title": "a", "body": "b", "expandedBody": "x", "image": "https://x.test/a.png"],
            ]),
        ]
        #expect(templateFieldListingProblems(of: TimerTemplate(), contents: contents) == [])
    }
}

@Suite("Timer template: validation rules")
struct TimerValidationTests {
    let registry = TemplateRegistry([TimerTemplate()])

    static let cases: [RuleCase] = [
        RuleCase("alternate image is an http(s) URL", "timer-fcm", [(["content", "alternate", "image"], "sale_ended.png")], path: "content.alternate.image", code: .invalidField),
        RuleCase("timer is required", "timer-fcm", [(["content", "timer"], nil)], path: "content.timer", code: .missingField),
        RuleCase("timer needs a duration or an end time", "timer-apns", [(["content", "timer"], [:])], path: "content.timer", code: .missingField),
        RuleCase("duration is a positive integer", "timer-apns", [(["content", "timer"], ["durationSeconds": 0])], path: "content.timer.durationSeconds", code: .invalidField),
        RuleCase("duration is an integer", "timer-fcm", [(["content", "timer"], ["durationSeconds": 1.5])], path: "content.timer.durationSeconds", code: .invalidField),
        RuleCase("end time is RFC 3339", "timer-fcm", [(["content", "timer"], ["endsAt": "2023-13-01T00:00:00Z"])], path: "content.timer.endsAt", code: .invalidField),
        RuleCase("FCM needs the alternate title", "timer-fcm", [(["content", "alternate", "title"], nil)], path: "content.alternate.title", code: .missingField),
        RuleCase("APNs needs the alternate title too (SDK)", "timer-apns", [(["content", "alternate"], nil)], path: "content.alternate.title", code: .missingField),
        RuleCase("timer colour is six hex digits", "timer-fcm", [(["content", "colors", "timer"], "white")], path: "content.colors.timer", code: .invalidField),
        RuleCase("link type is required on FCM", "timer-fcm", [(["content", "link", "type"], nil)], path: "content.link.type", code: .missingField),
        RuleCase("alternate title empty once personalized", "timer-fcm", [(["content", "alternate", "title"], "{{first}}")], path: "content.alternate.title", code: .invalidField),
    ]

    @Test(arguments: cases)
    func rule(_ rule: RuleCase) throws {
        try rule.check(registry)
    }

    @Test func apnsTimerTitleGuidelineIs50() throws {
        let event = try Fixtures.sample("timer-apns").setting(["content", "title"], to: .string(String(repeating: "t", count: 51)))
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(notification.warnings.map(\.description) == ["content.title: 51 characters; the apns guideline is at most 50"])
    }
}
