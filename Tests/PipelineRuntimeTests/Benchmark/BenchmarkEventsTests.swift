import BasicTemplate
import CarouselTemplate
import PipelineCore
import PipelineRuntime
import TestSupport
import Testing
import TimerTemplate

@Suite("Benchmark events: the samples with each event's own numbers spliced in")
struct BenchmarkEventsTests {
    static let sampleNames = ["basic-apns", "basic-fcm", "carousel-apns", "carousel-fcm", "timer-apns-full", "timer-apns", "timer-fcm"]

    @Test("every event is its sample with its id, recipient, token and first name; every 33rd has no title")
    func eventsCarryTheirNumbers() throws {
        let samples = try Self.sampleNames.map { try #require(Fixtures.sample($0).objectValue) }
        let events = BenchmarkEvents(samples: samples, count: 2_000)
        for index in [0, 5, 9, 38, 99, 1_234, 10_005, 123_456] {
            let event = events.event(at: index)
            let recipient = "user-\(index % 10_000)"
            #expect(String(decoding: event.key, as: UTF8.self) == recipient)
            let value = try JSONValue(parsing: event.value)
            let sample = JSONValue.object(samples[index % samples.count])
            #expect(value.at(["eventId"]) == .string("bench-\(index)"))
            #expect(value.at(["campaignId"]) == sample.at(["campaignId"]))
            #expect(value.at(["recipient", "id"]) == .string(recipient))
            #expect(value.at(["recipient", "token"]) == .string("token-\(recipient)-0123456789abcdef0123456789abcdef"))
            #expect(value.at(["recipient", "attributes", "firstName"]) == .string("Ada \(index % 97)"))
            if index % 33 == 5 {
                #expect(value.at(["content", "title"]) == nil)
            } else {
                let title = try #require(sample.at(["content", "title"])?.stringValue)
                #expect(value.at(["content", "title"]) == .string("{{firstName}}, \(title)"))
            }
            #expect(events.event(at: index).value == event.value, "the same bytes every time")
        }
    }

    @Test("the mix renders: every template on both platforms, about 3 % rejected")
    func mixRenders() throws {
        let samples = try Self.sampleNames.map { try #require(Fixtures.sample($0).objectValue) }
        let events = BenchmarkEvents(samples: samples, count: 660)
        let registry = TemplateRegistry([BasicTemplate(), CarouselTemplate(), TimerTemplate()])
        var rendered: Set<String> = []
        var rejected = 0
        for index in 0..<events.count {
            switch registry.render(eventBytes: events.event(at: index).value) {
            case .rendered(let notification): rendered.insert("\(notification.templateID)/\(notification.platform)")
            case .failed: rejected += 1
            }
        }
        #expect(rendered.count == 6, "\(rendered)")
        #expect(rejected == 20, "one in 33 has no title")
    }
}
