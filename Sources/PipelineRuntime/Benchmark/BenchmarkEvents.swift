public import PipelineCore

/// Realistic mixed events for benchmarks, made from sample events: every template on both platforms, personalized
/// titles, timers that have not ended, and about 3 % broken (no title). Each event is made when asked for, so a run
/// of 200,000 events does not hold them all in memory.
///
/// Making an event is cheap (the feeder runs in the measured process): every sample is encoded once, with markers
/// where the event's numbers go, and an event is those bytes with its numbers spliced in.
public struct BenchmarkEvents: Sendable {
    /// How many events there are.
    public let count: Int
    /// Per sample: the intact event and the broken one (no title).
    private let shapes: [(intact: Shape, broken: Shape)]
    /// Per sample: its recipient's platform (`nil` when it names none the pipeline knows).
    private let platforms: [Platform?]

    /// `count` events cycling through `samples`, each with its own event id and recipient.
    public init(samples: [JSONObject], count: Int) {
        self.shapes = samples.map { (Shape(Self.markedEvent($0, isBroken: false)), Shape(Self.markedEvent($0, isBroken: true))) }
        self.platforms = samples.map { sample in
            sample["recipient"]?.objectValue?["platform"]?.stringValue.flatMap(Platform.init(rawValue:))
        }
        self.count = samples.isEmpty ? 0 : count
    }

    /// The message id every outcome of the event at `index` carries (its id is `bench-<index>`, broken or not).
    public func messageId(at index: Int) -> String? {
        platforms[index % platforms.count].map { MessageID.make(eventId: "bench-\(index)", platform: $0) }
    }

    /// The event at `index` (key: its recipient id `user-<index % 10,000>`), the same bytes every time: event id
    /// `bench-<index>`, first name `Ada <index % 97>`, every 33rd event without a title.
    public func event(at index: Int) -> (key: [UInt8], value: [UInt8]) {
        let pair = shapes[index % shapes.count]
        let shape = index % 33 == 5 ? pair.broken : pair.intact
        let numbers = (event: index, recipient: index % 10_000, name: index % 97)
        var value: [UInt8] = []
        value.reserveCapacity(shape.size + 3 * 8)
        for (piece, slot) in zip(shape.pieces, shape.slots) {
            value.append(contentsOf: piece)
            switch slot {
            case .event: Self.appendDecimal(numbers.event, to: &value)
            case .recipient: Self.appendDecimal(numbers.recipient, to: &value)
            case .name: Self.appendDecimal(numbers.name, to: &value)
            }
        }
        value.append(contentsOf: shape.pieces[shape.pieces.count - 1])
        var key = Array("user-".utf8)
        Self.appendDecimal(numbers.recipient, to: &key)
        return (key, value)
    }

    /// The average size of an event value, in bytes (over the first few hundred).
    public var averageSize: Int {
        let sample = min(count, 660)
        guard sample > 0 else { return 0 }
        return (0..<sample).reduce(0) { $0 + event(at: $1).value.count } / sample
    }

    /// A sample with markers where an event's numbers go: U+0001 then `E` (event index), `R` (recipient number) or
    /// `N` (first-name number). A control character is written escaped (`\u0001E`), which no sample's own text
    /// produces unless it contains that control character.
    private static func markedEvent(_ sample: JSONObject, isBroken: Bool) -> [UInt8] {
        var event = sample
        event["eventId"] = "bench-\u{1}E"
        if var recipient = event["recipient"]?.objectValue {
            recipient["id"] = "user-\u{1}R"
            recipient["token"] = "token-user-\u{1}R-0123456789abcdef0123456789abcdef"
            recipient["attributes"] = ["firstName": "Ada \u{1}N", "city": "Lisbon"]
            event["recipient"] = .object(recipient)
        }
        if var content = event["content"]?.objectValue {
            if let title = content["title"]?.stringValue { content["title"] = .string("{{firstName}}, \(title)") }
            if content["timer"] != nil { content["timer"] = ["durationSeconds": 3600] }
            if isBroken { content["title"] = nil }
            event["content"] = .object(content)
        }
        return JSONValue.object(event).encoded()
    }

    private static func appendDecimal(_ number: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        while divisor <= number / 10 { divisor *= 10 }
        var rest = number
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Which number goes into a slot.
    private enum Slot: Sendable {
        case event, recipient, name
    }

    /// An encoded sample cut at its markers: `pieces[i]`, then the number of `slots[i]`, …, then the last piece.
    private struct Shape: Sendable {
        var pieces: [[UInt8]] = []
        var slots: [Slot] = []
        var size = 0

        init(_ marked: [UInt8]) {
            size = marked.count
            var start = 0
            var index = 0
            let marker = Array("\\u0001".utf8)
            while index + marker.count < marked.count {
                let slot = marked[index..<(index + marker.count)].elementsEqual(marker) ? Self.slot(marked[index + marker.count]) : nil
                if let slot {
                    pieces.append(Array(marked[start..<index]))
                    slots.append(slot)
                    index += marker.count + 1
                    start = index
                } else {
                    index += 1
                }
            }
            pieces.append(Array(marked[start...]))
        }

        private static func slot(_ letter: UInt8) -> Slot? {
            switch letter {
            case UInt8(ascii: "E"): .event
            case UInt8(ascii: "R"): .recipient
            case UInt8(ascii: "N"): .name
            default: nil
            }
        }
    }
}
