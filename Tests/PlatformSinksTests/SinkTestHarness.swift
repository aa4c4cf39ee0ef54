import BasicTemplate
import CarouselTemplate
import Logging
import PipelineCore
import PushSinks
import Synchronization
import TestSupport
import TimerTemplate

let sinkRegistry = TemplateRegistry([BasicTemplate(), CarouselTemplate(), TimerTemplate()])
let sinkLogger = Logger(label: "platform-sinks-tests")

/// Collects outcomes per event id.
final class Outcomes: Sendable {
    private let received = Mutex<[String: SinkOutcome]>([:])

    func completion(for eventId: String) -> @Sendable (SinkOutcome) -> Void {
        { outcome in self.received.withLock { $0[eventId] = outcome } }
    }

    subscript(eventId: String) -> SinkOutcome? { received.withLock { $0[eventId] } }

    var count: Int { received.withLock { $0.count } }

    func wait(for count: Int, timeout: Duration = .seconds(30)) async throws {
        let start = ContinuousClock.now
        while self.count < count {
            if ContinuousClock.now - start > timeout { throw HarnessError("only \(self.count) of \(count) outcomes within \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a sink's workers while `body` runs.
func whileRunning<S: PushSink, T>(_ sink: S, _ body: () async throws -> T) async throws -> T {
    let task = Task { await sink.run() }
    do {
        let result = try await body()
        task.cancel()
        await task.value
        return result
    } catch {
        task.cancel()
        await task.value
        throw error
    }
}

/// A rendered notification of a sample, for one recipient and token.
func sample(_ name: String, _ index: Int, token: String, recipient: String? = nil) throws -> RenderedNotification {
    try Fixtures.notification(name, registry: sinkRegistry, eventId: "event-\(index)", recipient: recipient ?? "user-\(index)", token: token)
}
