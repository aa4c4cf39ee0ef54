import PipelineCore
import PipelineRuntime

// A plain loop over encoding the analytics records the pipeline writes for every event (the producer's delivery
// thread turns each acknowledged payload into one), for profilers: `swift build -c release --product OutcomeProfile`
// then `valgrind --tool=callgrind .build/release/OutcomeProfile 20000`. Encodes a `push.delivered`, a `push.expired`
// (cause `timer`) and a `push.rejected` record in turn; the argument is the number of records (default 1,000,000).

let count = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000_000
let identity = MessageIdentity(
    messageId: MessageID.make(eventId: "6f1c2b7e-3d4a-4e5f-9a8b-7c6d5e4f3a2b", platform: .fcm),
    eventId: "6f1c2b7e-3d4a-4e5f-9a8b-7c6d5e4f3a2b",
    campaignId: "winter-sale-2023",
    recipientId: "user-8812734",
    platform: .fcm,
    template: "basic"
)
let occurredAt = Timestamp(secondsSince1970: 1_703_462_400, nanoseconds: 123_456_000)
let events = [
    AnalyticsEvent(kind: .delivered, identity: identity, occurredAt: occurredAt, sink: "kafka:push.fcm"),
    AnalyticsEvent(kind: .expired, identity: identity, occurredAt: occurredAt, cause: .timer),
    AnalyticsEvent(
        kind: .rejected,
        identity: identity,
        occurredAt: occurredAt,
        reasonCode: "missing_field",
        reasonDetail: "content.title: required"
    ),
]
var totalBytes = 0
let clock = ContinuousClock()
let start = clock.now
for index in 0..<count {
    totalBytes &+= events[index % events.count].encoded().count
}
let elapsed = clock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("\(count) records in \(elapsed), \(Int(Double(count) / seconds)) records/s, \(totalBytes) bytes")

// `OutcomeProfile 0 dump`: print each record, to compare outputs across changes.
if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "dump" {
    for event in events { print(String(decoding: event.encoded(), as: UTF8.self)) }
}
