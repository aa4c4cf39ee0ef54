public import PipelineCore

/// Realistic mixed events for benchmarks, made from sample events: every template on both platforms, personalized
/// titles, timers that have not ended, and about 3 % broken (no title). Each event is made when asked for, so a run
/// of 200,000 events does not hold them all in memory.
public struct BenchmarkEvents: Sendable {
    /// How many events there are.
    public let count: Int
    private let samples: [JSONObject]

    /// `count` events cycling through `samples`, each with its own event id and recipient.
    public init(samples: [JSONObject], count: Int) {
        self.samples = samples
        self.count = samples.isEmpty ? 0 : count
    }

    /// The event at `index` (key: its recipient id), the same bytes every time.
    public func event(at index: Int) -> (key: [UInt8], value: [UInt8]) {
        var event = samples[index % samples.count]
        let recipient = "user-\(index % 10_000)"
        event["eventId"] = .string("bench-\(index)")
        if var recipientObject = event["recipient"]?.objectValue {
            recipientObject["id"] = .string(recipient)
            recipientObject["token"] = .string("token-\(recipient)-0123456789abcdef0123456789abcdef")
            recipientObject["attributes"] = ["firstName": .string("Ada \(index % 97)"), "city": "Lisbon"]
            event["recipient"] = .object(recipientObject)
        }
        if var content = event["content"]?.objectValue {
            if let title = content["title"]?.stringValue { content["title"] = .string("{{firstName}}, \(title)") }
            if content["timer"] != nil { content["timer"] = ["durationSeconds": 3600] }
            if index % 33 == 5 { content["title"] = nil }
            event["content"] = .object(content)
        }
        return (Array(recipient.utf8), JSONValue.object(event).encoded())
    }

    /// The average size of an event value, in bytes (over the first few hundred).
    public var averageSize: Int {
        let sample = min(count, 660)
        guard sample > 0 else { return 0 }
        return (0..<sample).reduce(0) { $0 + event(at: $1).value.count } / sample
    }
}
