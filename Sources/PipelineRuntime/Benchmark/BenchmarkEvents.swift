public import PipelineCore

/// Realistic mixed events for benchmarks, made from sample events: every template on both platforms, personalized
/// titles, timers that have not ended, and about 3 % broken (no title).
public enum BenchmarkEvents {
    /// `count` events cycling through `samples`, each with its own event id and recipient.
    public static func make(from samples: [JSONObject], count: Int) -> [(key: [UInt8], value: [UInt8])] {
        guard !samples.isEmpty else { return [] }
        return (0..<count).map { index in
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
    }
}
