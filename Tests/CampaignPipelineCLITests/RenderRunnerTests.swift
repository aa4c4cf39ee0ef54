@testable import CampaignPipelineCLI
import TestSupport
import Foundation
import PipelineCore
import Testing

@Suite("render: the runner behind the command")
struct RenderRunnerTests {
    let runner = RenderRunner(registry: BuiltinTemplates.registry)

    @Test func everySampleRenders() throws {
        let samples = try Paths.samples()
        #expect(samples.count == 7)
        for sample in samples {
            let captured = runner.capture(Array(try Data(contentsOf: sample)), source: sample.lastPathComponent)
            #expect(captured.summary == RenderRunner.Summary(rendered: 1, failed: 0), "\(sample.lastPathComponent): \(captured.stderr)")
            #expect(captured.stdout.count == 1)
            #expect(captured.stderr.isEmpty, "\(sample.lastPathComponent): \(captured.stderr)")
            let payload = try JSONValue(parsing: Array(try #require(captured.stdout.first).utf8))
            let isFCM = sample.lastPathComponent.contains("fcm")
            #expect(payload.objectValue?.contains(isFCM ? "message" : "aps") == true)
        }
    }

    static let brokenExpectations: [(file: String, lines: [String])] = [
        ("missing-title.json", ["error: broken-missing-title: content.title: required"]),
        ("unknown-platform.json", ["error: broken-unknown-platform: recipient.platform: unknown platform 'web'; expected fcm or apns"]),
        ("unknown-template.json", ["error: broken-unknown-template: template: unknown template 'banner'; known: basic, carousel (car), timer"]),
        ("too-many-buttons.json", ["error: broken-too-many-buttons: content.buttons: must have 1 to 2 buttons when remindLater is set, found 3"]),
        ("carousel-item-without-image.json", ["error: broken-item-image: content.items[3].image: required"]),
        ("timer-without-timer.json", [
            "error: broken-timer: content.alternate.title: required",
            "error: broken-timer: content.timer: required",
        ]),
        ("several-problems.json", [
            "error: broken-several: content.title: required",
            "error: broken-several: content.link.type: required",
            "error: broken-several: content.colors.title: must be six hex digits like 00FF00 (optionally after '#'), found '#GG0000'",
        ]),
        ("truncated.json", ["error: (unknown): $: invalid JSON in truncated.json: unexpected end of input at line 8, column 1 (byte 200)"]),
    ]

    @Test(arguments: brokenExpectations.map(\.file))
    func brokenFixtureFailsWithExpectedMessages(_ file: String) throws {
        let expected = try #require(Self.brokenExpectations.first { $0.file == file }?.lines)
        let bytes = Array(try Data(contentsOf: Paths.brokenFixtures.appendingPathComponent(file)))
        let captured = runner.capture(bytes, source: file)
        #expect(captured.summary == RenderRunner.Summary(rendered: 0, failed: 1))
        #expect(captured.stdout.isEmpty)
        #expect(captured.stderr == expected)
    }

    /// Found by a plugin author's trial: an event that failed lost its warnings, among them the one that says why a
    /// required field is missing (a misspelt key, read by no template).
    @Test func aFailedEventKeepsItsWarnings() throws {
        let sample = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-fcm.json")))
        var event = try #require(sample.objectValue)
        var content = try #require(event["content"]?.objectValue)
        content["titel"] = content["title"]
        content["title"] = nil
        event["content"] = .object(content)
        let id = try #require(event["eventId"]?.stringValue)
        let captured = runner.capture(Array(JSONValue.object(event).jsonString.utf8), source: "misspelt.json")
        #expect(captured.summary == RenderRunner.Summary(rendered: 0, failed: 1))
        #expect(captured.stderr == [
            "error: \(id): content.title: required",
            "warning: \(id): content.titel: not a field of template 'basic'; ignored",
        ])
    }

    @Test func jsonLinesKeepGoingAfterABrokenLine() throws {
        let good = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-apns.json"))).jsonString
        let input = [good, "{\"eventId\": \"x\", oops", good, "", "[1,2]"].joined(separator: "\n")
        let captured = runner.capture(Array(input.utf8), source: "lines.jsonl")
        #expect(captured.summary == RenderRunner.Summary(rendered: 2, failed: 2))
        #expect(captured.stdout.count == 2)
        #expect(captured.stderr == [
            "error: (unknown): $: invalid JSON in lines.jsonl: unexpected character at line 2, column 18 (byte \(good.utf8.count + 18))",
            "error: (unknown): $: expected an event object, found an array",
        ])
    }

    /// A line cut short after a complete member reads on into the next line's event, where the error is found (the
    /// `{` that starts it): rendering resumes at the line after the broken one, so that event and those after it
    /// still render. (A line cut inside a string fails at its own newline, a control character in the string.)
    @Test func aLineCutShortLosesOnlyItself() throws {
        let good = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-apns.json"))).jsonString
        for cut in [#"{"eventId":"broken","template":"basic""#, String(good.prefix(60))] {
            for input in [[cut, good, good], [good, cut, good, good, cut, good], [cut, cut, good]] {
                let captured = runner.capture(Array(input.joined(separator: "\n").utf8), source: "cut.jsonl")
                let cuts = input.filter { $0 == cut }.count
                #expect(captured.summary == RenderRunner.Summary(rendered: input.count - cuts, failed: cuts), "\(cut): \(captured.stderr)")
                #expect(captured.stdout.count == input.count - cuts)
            }
        }
    }

    /// A send that refers to a stored campaign renders the campaign's content when the definitions are given (as
    /// the pipeline does), and fails naming `content` without them.
    @Test func sendsOfStoredCampaignsRenderWithDefinitions() throws {
        let demo = Paths.repositoryRoot.appendingPathComponent("Config/demo")
        let sends = Array(try Data(contentsOf: demo.appendingPathComponent("sends.jsonl")))
        let reference = try #require(String(decoding: sends, as: UTF8.self).split(separator: "\n").first { $0.contains("demo-campaign-reference") })

        let alone = runner.capture(Array(reference.utf8))
        #expect(alone.summary == RenderRunner.Summary(rendered: 0, failed: 1))
        #expect(alone.stderr.first?.hasPrefix("error: demo-campaign-reference: content:") == true, "\(alone.stderr)")

        let campaigns = try RenderCommand.campaigns(from: demo.appendingPathComponent("definitions.jsonl").path)
        let withDefinitions = RenderRunner(registry: BuiltinTemplates.registry, campaigns: campaigns).capture(Array(reference.utf8))
        #expect(withDefinitions.summary == RenderRunner.Summary(rendered: 1, failed: 0), "\(withDefinitions.stderr)")
        let payload = try JSONValue(parsing: Array(try #require(withDefinitions.stdout.first).utf8))
        #expect(payload.objectValue?["message"]?.objectValue?["data"]?.objectValue?["adb_title"]?.stringValue?.hasPrefix("Spring sale, ") == true, "\(payload)")

        // A campaign with no definition is named.
        let unknown = reference.replacingOccurrences(of: "spring-sale", with: "autumn-sale")
        let missing = RenderRunner(registry: BuiltinTemplates.registry, campaigns: campaigns).capture(Array(unknown.utf8))
        #expect(missing.stderr == ["error: demo-campaign-reference: content: required: the event has no content and campaign 'autumn-sale' has no definition"])

        // Its content is the basic template's: named as another template, the send is refused at template.
        let otherTemplate = reference.replacingOccurrences(of: #""template":"basic""#, with: #""template":"timer""#)
        let refused = RenderRunner(registry: BuiltinTemplates.registry, campaigns: campaigns).capture(Array(otherTemplate.utf8))
        #expect(refused.stderr == ["error: demo-campaign-reference: template: 'timer' is not the template of campaign 'spring-sale' version 1, 'basic', whose content the event renders"])

        // A definitions file that cannot be read says why.
        #expect(throws: (any Error).self) { try RenderCommand.campaigns(from: demo.path) }
        do {
            _ = try RenderCommand.campaigns(from: "/nonexistent/definitions.jsonl")
            Issue.record("a missing definitions file must be refused")
        } catch {
            #expect("\(error)" == "--definitions: cannot read the file '/nonexistent/definitions.jsonl': no such file")
        }
    }

    @Test func envelopeWrapsPayloadWithIdsHeadersAndWarnings() throws {
        var event = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/timer-apns-full.json")))
        if case .object(var object) = event {
            object["options"] = ["priority": "high", "ttlSeconds": 3600, "collapseKey": "sale"]
            if case .object(var content) = object["content"] {
                content["subtitle"] = "Hi {{firstName}}"
                object["content"] = .object(content)
            }
            event = .object(object)
        }
        let envelopeRunner = RenderRunner(registry: BuiltinTemplates.registry, isEnvelope: true)
        let captured = envelopeRunner.capture(Array(event.jsonString.utf8))
        #expect(captured.stderr.isEmpty, "warnings go inside the envelope")
        let envelope = try JSONValue(parsing: Array(try #require(captured.stdout.first).utf8))
        let object = try #require(envelope.objectValue)
        #expect(object.keys == ["platform", "messageId", "token", "headers", "payload", "warnings"])
        #expect(object["platform"] == "apns")
        #expect(object["messageId"] == .string(MessageID.make(eventId: "00000000-0000-4000-8000-000000000007", platform: .apns)))
        #expect(object["token"] == "APNS_DEVICE_TOKEN")
        #expect(object["headers"] == [
            "apns-push-type": "alert", "apns-priority": "10", "apns-expiration": "1703070000", "apns-collapse-id": "sale",
        ])
        #expect(envelope.objectValue?["payload"]?.objectValue?["aps"]?.objectValue?["alert"]?.objectValue?["subtitle"] == "Hi ")
        #expect(object["warnings"] == [
            ["path": "content.subtitle", "message": "attribute 'firstName' is not in recipient.attributes; rendered empty"],
        ])
    }

    @Test func warningsGoToDiagnosticsWithoutEnvelope() throws {
        var event = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/basic-fcm.json")))
        if case .object(var object) = event, case .object(var content) = object["content"] {
            content["title"] = .string(String(repeating: "a", count: 40))
            object["content"] = .object(content)
            event = .object(object)
        }
        let captured = runner.capture(Array(event.jsonString.utf8))
        #expect(captured.stdout.count == 1)
        #expect(captured.stderr == ["warning: 00000000-0000-4000-8000-000000000001: content.title: 40 characters; the fcm guideline is at most 35"])
    }
}

@Suite("demo: the samples moved to the time it runs")
struct DemoSampleTimeTests {
    @Test("every time of a sample moves by one amount, so that occurredAt is now and the timer still runs")
    func samplesMovedToNow() throws {
        let sample = try JSONValue(parsing: Data(contentsOf: Paths.repositoryRoot.appendingPathComponent("Config/samples/timer-fcm.json")))
        let now = try Timestamp(rfc3339: "2030-01-01T00:00:00Z")
        let moved = DemoCommand.movedToNow(sample, now: now)
        let event = try #require(moved.objectValue)
        #expect(event["occurredAt"]?.stringValue.flatMap { try? Timestamp(rfc3339: $0) } == now)
        // The sample's timer ends four days and fourteen hours after it was sent (2023-12-20T10:00 → 12-25T00:00).
        let endsAt = event["content"]?.objectValue?["timer"]?.objectValue?["endsAt"]?.stringValue
        #expect(endsAt.flatMap { try? Timestamp(rfc3339: $0) } == now.adding(seconds: 4 * 86_400 + 14 * 3_600))
        #expect(event["eventId"] == sample.objectValue?["eventId"], "other values are kept")
    }
}
