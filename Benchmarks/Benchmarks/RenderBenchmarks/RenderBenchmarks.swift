import BasicTemplate
import Benchmark
import CarouselTemplate
import PipelineCore
import RenderFixtures
import TimerTemplate

/// The render path end to end, per event: parse the JSON bytes, decode the `PushRequest`, render
/// the template (with personalization), assemble and encode the platform payload, derive the
/// message id — exactly what the pipeline does for each Kafka record
/// (`TemplateRegistry.render(eventBytes:scratch:)`, with one `RenderScratch` reused from event to
/// event, as each of the pipeline's workers keeps one).
///
/// Each benchmark renders 1,000 events per measured iteration (`scalingFactor: .kilo`), so the
/// figures printed are per event: throughput in events/s, wall clock and mallocs per event.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        scalingFactor: .kilo,
        // Short runs: the machine has two cores shared with other work.
        maxDuration: .seconds(2),
        maxIterations: 200
    )

    // The shipped templates, registered the way the executable does (see BuiltinTemplates).
    let registry = TemplateRegistry([BasicTemplate(), CarouselTemplate(), TimerTemplate()])
    let events = RenderEvents.all
    for event in events { checkRendersCleanly(event, with: registry) }

    for event in events {
        Benchmark("render \(event.name) (\(event.bytes.count) B)") { benchmark in
            let bytes = event.bytes
            let scratch = RenderScratch()
            for _ in benchmark.scaledIterations {
                blackHole(payloadBytes(registry.render(eventBytes: bytes, scratch: scratch)))
            }
        }
    }

    // The average event: the six events in turn (one template × platform per event).
    let averageSize = events.map(\.bytes.count).reduce(0, +) / events.count
    Benchmark("render mixed average event (\(averageSize) B)") { benchmark in
        var index = 0
        let scratch = RenderScratch()
        for _ in benchmark.scaledIterations {
            blackHole(payloadBytes(registry.render(eventBytes: events[index].bytes, scratch: scratch)))
            index = index == events.count - 1 ? 0 : index + 1
        }
    }
}

/// The wire bytes of a rendered event (empty for a failure, which the start-up check rules out).
@inline(__always)
private func payloadBytes(_ outcome: RenderOutcome) -> [UInt8] {
    guard case .rendered(let notification) = outcome else { return [] }
    return notification.payloadBytes
}

/// Stops the run if `event` does not render, or renders with warnings: the suite must measure the
/// normal path, not error reporting.
private func checkRendersCleanly(_ event: RenderEvents.Event, with registry: TemplateRegistry) {
    switch registry.render(eventBytes: event.bytes) {
    case .rendered(let notification):
        guard notification.warnings.isEmpty else {
            fatalError("benchmark event \(event.name) renders with warnings: \(notification.warnings)")
        }
    case .failed(let error):
        fatalError("benchmark event \(event.name) does not render: \(error)")
    }
}
