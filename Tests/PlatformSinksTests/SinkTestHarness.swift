import BasicTemplate
import CarouselTemplate
import Foundation
import Logging
import PipelineCore
@testable import PlatformSinks
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

/// The credentials' clocks, moved by the test: time passing moves both; a step of the system clock (NTP setting it, a
/// virtual machine resumed) moves the wall clock alone.
final class ManualCredentialClock: Sendable {
    private struct Readings {
        var wall: Timestamp
        var elapsed: Duration = .zero
    }

    private let readings: Mutex<Readings>
    private let start = ContinuousClock.now

    /// Starts at `wall` (by default now, as the system's clock).
    init(wall: Timestamp = Timestamp(secondsSince1970: Int64(Date().timeIntervalSince1970))) {
        readings = Mutex(Readings(wall: wall))
    }

    /// `seconds` pass.
    func advance(seconds: Int64) {
        readings.withLock {
            $0.wall = $0.wall.adding(seconds: seconds)
            $0.elapsed += .seconds(seconds)
        }
    }

    /// The system clock is set `seconds` forward (backward when negative); no time passes.
    func stepWall(seconds: Int64) {
        readings.withLock { $0.wall = $0.wall.adding(seconds: seconds) }
    }

    var clock: CredentialClock {
        CredentialClock(
            wall: { self.readings.withLock { $0.wall } },
            monotonic: { self.start + self.readings.withLock { $0.elapsed } }
        )
    }
}
