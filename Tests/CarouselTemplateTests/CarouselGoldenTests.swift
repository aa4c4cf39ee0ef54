import TestSupport
import CarouselTemplate
import PipelineCore
import Testing

@Suite("Carousel template: golden payloads from the specification")
struct CarouselGoldenTests {
    let registry = TemplateRegistry([CarouselTemplate()])

    @Test func fcmMatchesSeedExample() throws {
        let notification = try #require(renderExpectingSuccess(registry, try Fixtures.sample("carousel-fcm")))
        let actual = try JSONValue(parsing: notification.payloadBytes)
        let seed = try Fixtures.seed("carousel-fcm")
        #expect(actual == seed)
        // adb_items is a JSON *string* on FCM; compare it decoded too (and byte-exact, since our
        // writer uses the same compact form as the seed).
        let itemsPath = ["message", "data", "adb_items"]
        let items = try #require(actual.at(itemsPath)?.stringValue)
        #expect(try JSONValue(parsing: Array(items.utf8)) == JSONValue(parsing: Array(try #require(seed.at(itemsPath)?.stringValue).utf8)))
        #expect(notification.templateID == "carousel")
        #expect(notification.warnings.isEmpty, "\(notification.warnings)")
    }

    /// The seed's APNs example carries `adb_body_alt`, which the iOS carousel never reads (only the
    /// timer does); we do not emit it (docs/conformance.md). Documented transformation: the seed
    /// example with `adb_body_alt` removed.
    @Test func apnsMatchesSeedExampleWithoutBodyAlt() throws {
        let notification = try #require(renderExpectingSuccess(registry, try Fixtures.sample("carousel-apns")))
        let seed = try Fixtures.seed("carousel-apns")
        #expect(seed.at(["adb_body_alt"]) != nil, "the seed example is expected to carry adb_body_alt")
        #expect(try JSONValue(parsing: notification.payloadBytes) == seed.setting(["adb_body_alt"], to: nil))
        #expect(notification.templateID == "carousel", "the event says 'car'; the alias resolves")
        #expect(notification.warnings.isEmpty, "\(notification.warnings)")
    }

    @Test func alternateIsNotACarouselField() throws {
        let event = try Fixtures.sample("carousel-apns").setting(["content", "alternate"], to: ["body": "x"])
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["adb_body_alt"]) == nil)
        #expect(notification.warnings.map(\.description) == ["content.alternate: not a field of template 'carousel'; ignored"])
    }

    @Test func fcmItemWithoutURIGetsTheLink() throws {
        let event = try Fixtures.sample("carousel-fcm").setting(["content", "items"], to: [
            ["image": "https://img.test/1.png", "text": "one"],
            ["image": "https://img.test/2.png", "uri": "https://own.test"],
            ["image": "https://img.test/3.png"],
        ])
        let notification = try #require(renderExpectingSuccess(registry, event))
        let items = try #require(try JSONValue(parsing: notification.payloadBytes).at(["message", "data", "adb_items"])?.stringValue)
        #expect(items == #"[{"img":"https://img.test/1.png","txt":"one","uri":"https://sneakerland.com/newReleases"},{"img":"https://img.test/2.png","uri":"https://own.test"},{"img":"https://img.test/3.png","uri":"https://sneakerland.com/newReleases"}]"#)
    }

    /// The iOS SDK opens the app for an item whose `uri` is empty, as Android's auto mode does: an empty one is none.
    @Test func itemWithEmptyURIGetsTheLink() throws {
        let event = try Fixtures.sample("carousel-apns").setting(["content", "link"], to: ["uri": "myapp://book"]).setting(["content", "items"], to: [
            ["image": "https://img.test/1.png", "uri": ""],
            ["image": "https://img.test/2.png", "uri": "{{deepLink}}"],
        ])
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["adb_items"]) == [
            ["img": "https://img.test/1.png", "uri": "myapp://book"],
            ["img": "https://img.test/2.png", "uri": "myapp://book"],
        ])
    }

    /// iOS shows an item's caption as `txt ??` the body: an item text empty once personalized is left out, not
    /// written as `""` (a blank caption).
    @Test func itemTextEmptyOncePersonalizedIsLeftOut() throws {
        let event = try Fixtures.sample("carousel-apns").setting(["content", "items"], to: [
            ["image": "https://img.test/1.png", "text": "{{caption}}"],
            ["image": "https://img.test/2.png", "text": ""],
            ["image": "https://img.test/3.png", "text": "three"],
        ])
        let items = try JSONValue(parsing: try #require(renderExpectingSuccess(registry, event)).payloadBytes).at(["adb_items"])
        #expect(items?.arrayValue?.map { $0.at(["txt"]) } == [nil, nil, "three"], "\(String(describing: items))")
    }

    /// A filmstrip is a manual carousel: the Android SDK takes a carousel without a mode for an automatic one, whose
    /// builder never reads the layout.
    @Test func filmstripWithoutModeIsManual() throws {
        let event = try Fixtures.sample("carousel-fcm").setting(["content", "layout"], to: "filmstrip").setting(["content", "mode"], to: nil)
        let notification = try #require(renderExpectingSuccess(registry, event))
        let data = try JSONValue(parsing: notification.payloadBytes).at(["message", "data"])
        #expect(data?.at(["adb_car_mode"]) == "manual")
        #expect(data?.at(["adb_car_layout"]) == "filmstrip")
        #expect(notification.warnings.isEmpty, "\(notification.warnings)")

        let automatic = try #require(renderExpectingSuccess(registry, event.setting(["content", "mode"], to: "auto")))
        #expect(try JSONValue(parsing: automatic.payloadBytes).at(["message", "data", "adb_car_mode"]) == "auto", "an explicit mode stays")
        #expect(automatic.warnings.map(\.description) == [
            "content.layout: 'filmstrip' has no effect with mode 'auto': the Android SDK shows a filmstrip only in manual mode",
        ])
    }

    @Test func fcmAlwaysCarriesALayout() throws {
        let event = try Fixtures.sample("carousel-fcm").setting(["content", "layout"], to: nil)
        let notification = try #require(renderExpectingSuccess(registry, event))
        #expect(try JSONValue(parsing: notification.payloadBytes).at(["message", "data", "adb_car_layout"]) == "default")
    }

    @Test func apnsItemWithoutURIGetsTheLink() throws {
        var event = try Fixtures.sample("carousel-apns").setting(["content", "link"], to: ["uri": "myapp://book"])
        event = event.setting(["content", "items"], to: [
            ["image": "https://img.test/1.png"],
            ["image": "https://img.test/2.png", "uri": "myapp://own"],
        ])
        let notification = try #require(renderExpectingSuccess(registry, event))
        let payload = try JSONValue(parsing: notification.payloadBytes)
        #expect(payload.at(["adb_items"]) == [
            ["img": "https://img.test/1.png", "uri": "myapp://book"],
            ["img": "https://img.test/2.png", "uri": "myapp://own"],
        ])
        #expect(payload.at(["adb_uri"]) == "myapp://book")
    }

    /// `templates` lists what the template reads: every listed field is in a sample and read, every key of the samples
    /// is listed (the samples, plus the listed fields they leave out).
    @Test func fieldsListWhatRenderReads() throws {
        let contents = try ["carousel-fcm", "carousel-apns"].map { try Fixtures.sampleContent($0) } + [
            try Fixtures.sampleContent("carousel-fcm", adding: [
                "subtitle": "s", "expandedTitle": "e", "badge": 2, "threadId": "t", "icon": "ic_legacy", "notificationPriority": "PRIORITY_HIGH",
                "channelId": "c", "tag": "g", "ticker": "k", "sticky": false,
            ]),
        ]
        #expect(templateFieldListingProblems(of: CarouselTemplate(), contents: contents) == [])
    }
}

@Suite("Carousel template: validation rules")
struct CarouselValidationTests {
    let registry = TemplateRegistry([CarouselTemplate()])

    static func items(_ count: Int) -> JSONValue {
        .array((0..<count).map { .object(["image": .string("https://img.test/\($0).png")]) })
    }

    static let cases: [RuleCase] = [
        RuleCase("items are required", "carousel-fcm", [(["content", "items"], nil)], path: "content.items", code: .missingField),
        RuleCase("items must be an array", "carousel-apns", [(["content", "items"], "three")], path: "content.items", code: .invalidField),
        RuleCase("FCM needs at least 3 items", "carousel-fcm", [(["content", "items"], items(2))], path: "content.items", code: .invalidField),
        RuleCase("FCM allows at most 5 items", "carousel-fcm", [(["content", "items"], items(6))], path: "content.items", code: .invalidField),
        RuleCase("APNs needs at least 2 items", "carousel-apns", [(["content", "items"], items(1))], path: "content.items", code: .invalidField),
        RuleCase("APNs allows at most 5 items", "carousel-apns", [(["content", "items"], items(6))], path: "content.items", code: .invalidField),
        RuleCase("every item needs an image", "carousel-fcm", [(["content", "items"], [["image": "https://img.test/a.png"], ["image": "https://img.test/b.png"], ["image": "https://img.test/c.png"], ["text": "no image"]])], path: "content.items[3].image", code: .missingField),
        RuleCase("item image is a string", "carousel-apns", [(["content", "items"], [["image": "https://img.test/a.png"], ["image": 7]])], path: "content.items[1].image", code: .invalidField),
        RuleCase("mode is auto or manual", "carousel-fcm", [(["content", "mode"], "Auto")], path: "content.mode", code: .invalidField),
        RuleCase("layout is default or filmstrip", "carousel-fcm", [(["content", "layout"], "grid")], path: "content.layout", code: .invalidField),
        RuleCase("link type is required on FCM", "carousel-fcm", [(["content", "link", "type"], nil)], path: "content.link.type", code: .missingField),
        RuleCase("colour is six hex digits", "carousel-fcm", [(["content", "colors", "background"], "#12345")], path: "content.colors.background", code: .invalidField),
        RuleCase("title is required", "carousel-apns", [(["content", "title"], nil)], path: "content.title", code: .missingField),
        RuleCase("item image is a URL", "carousel-fcm", [(["content", "items"], [["image": "https://img.test/a.png"], ["image": "shoe2.png"], ["image": "https://img.test/c.png"]])], path: "content.items[1].image", code: .invalidField),
        RuleCase("item image is an http(s) URL", "carousel-apns", [(["content", "items"], [["image": "ftp://img.test/a.png"], ["image": "https://img.test/b.png"]])], path: "content.items[0].image", code: .invalidField),
        RuleCase("item image URL has a host", "carousel-apns", [(["content", "items"], [["image": "https:///a.png"], ["image": "https://img.test/b.png"]])], path: "content.items[0].image", code: .invalidField),
        RuleCase("item image empty once personalized", "carousel-apns", [(["content", "items"], [["image": "{{heroImage}}"], ["image": "https://img.test/2.png"]])], path: "content.items[0].image", code: .invalidField),
    ]

    @Test(arguments: cases)
    func rule(_ rule: RuleCase) throws {
        try rule.check(registry)
    }

    /// The count rule counts every element, objects or not (`FieldReader.elementCount`): two images and a number
    /// are three items, so the only issue is the element that is not an object.
    @Test func itemCountIncludesElementsThatAreNotObjects() throws {
        let event = try Fixtures.sample("carousel-fcm").setting(["content", "items"], to: [["image": "https://img.test/a.png"], ["image": "https://img.test/b.png"], 7])
        let error = try #require(renderExpectingFailure(registry, event))
        #expect(error.issues.map { "\($0.path)" } == ["content.items[2]"])
    }

    @Test func itemCountBoundsAreInclusive() throws {
        for (sample, count) in [("carousel-fcm", 3), ("carousel-fcm", 5), ("carousel-apns", 2), ("carousel-apns", 5)] {
            let event = try Fixtures.sample(sample).setting(["content", "items"], to: Self.items(count))
            #expect(renderExpectingSuccess(registry, event) != nil, "\(sample) with \(count) items")
        }
    }
}
