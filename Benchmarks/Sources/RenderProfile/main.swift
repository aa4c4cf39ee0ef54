import BasicTemplate
import CarouselTemplate
import Foundation
import PipelineCore
import RenderFixtures
import TimerTemplate

// A plain loop over the render path for profilers (callgrind, perf), without the benchmark
// harness: `swift build -c release --product RenderProfile` then
// `valgrind --tool=callgrind .build/release/RenderProfile 20000`.
// Renders the six benchmark events in turn; the argument is the number of events (default 100,000).
// RENDER_PROFILE_EVENT=carousel/apns (a name `dump` prints) renders that event only.

let count = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
let registry = TemplateRegistry([BasicTemplate(), CarouselTemplate(), TimerTemplate()])
let only = ProcessInfo.processInfo.environment["RENDER_PROFILE_EVENT"]
let events = RenderEvents.all.filter { only == nil || $0.name == only }
guard !events.isEmpty else {
    let names = RenderEvents.all.map(\.name).joined(separator: ", ")
    FileHandle.standardError.write(Data("RenderProfile: RENDER_PROFILE_EVENT=\(only ?? ""): no such event; the events are \(names)\n".utf8))
    exit(2)
}
var totalBytes = 0
// One scratch for the whole loop, as each of the pipeline's workers keeps one.
let scratch = RenderScratch()
let clock = ContinuousClock()
let start = clock.now
for index in 0..<count {
    if case .rendered(let notification) = registry.render(eventBytes: events[index % events.count].bytes, scratch: scratch) {
        totalBytes &+= notification.payloadBytes.count
    }
}
let elapsed = clock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("\(count) events in \(elapsed), \(Int(Double(count) / seconds)) events/s, \(totalBytes) payload bytes")

// `RenderProfile 0 dump`: print what each event renders to, to compare outputs across changes.
if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "dump" {
    for event in events {
        switch registry.render(eventBytes: event.bytes) {
        case .rendered(let notification):
            print(event.name, event.bytes.count, "B", notification.messageId, notification.headers, notification.warnings)
            print(String(decoding: notification.payloadBytes, as: UTF8.self))
        case .failed(let error):
            print(event.name, "failed:", error)
        }
    }
}
