import Logging
@testable import PipelineRuntime
import Synchronization
import Testing
import TestSupport

@Suite("A warning that can come once per record is logged at most so many times per interval")
struct RepeatedWarningTests {
    @Test("past the limit, occurrences go to debug and the next warning logged counts them; flush logs what is left")
    func limitPerInterval() {
        let recorder = LogRecorder()
        let logger = recorder.logger(level: .debug)
        let warning = RepeatedWarning("Event rejected", limit: 3, interval: .seconds(10))
        let start = ContinuousClock.now
        for index in 0..<5 {
            warning.log(to: logger, at: start, metadata: ["eventId": "\(index)"])
        }
        warning.log(to: logger, at: start + .seconds(9), metadata: ["eventId": "5"])
        // A new window: logged, with the three that were not.
        warning.log(to: logger, at: start + .seconds(10), metadata: ["eventId": "6"])
        warning.flush(to: logger)
        warning.log(to: logger, at: start + .seconds(11), metadata: ["eventId": "7"])
        warning.log(to: logger, at: start + .seconds(11), metadata: ["eventId": "8"])
        warning.log(to: logger, at: start + .seconds(12), metadata: ["eventId": "9"])
        warning.flush(to: logger)
        warning.flush(to: logger)

        let lines = recorder.lines.map { line in
            (line.level, line.message, line.metadata["eventId"]?.description, line.metadata["omittedSinceLastLogged"]?.description)
        }
        let expected: [(Logger.Level, String, String?, String?)] = [
            (.warning, "Event rejected", "0", nil),
            (.warning, "Event rejected", "1", nil),
            (.warning, "Event rejected", "2", nil),
            (.debug, "Event rejected", "3", nil),
            (.debug, "Event rejected", "4", nil),
            (.debug, "Event rejected", "5", nil),
            (.warning, "Event rejected", "6", "3"),
            (.warning, "Event rejected", "7", nil),
            (.warning, "Event rejected", "8", nil),
            (.debug, "Event rejected", "9", nil),
            (.warning, "Event rejected: 1 more not logged", nil, "1"),
        ]
        #expect(lines.count == expected.count)
        for (line, want) in zip(lines, expected) {
            #expect(line.0 == want.0 && line.1 == want.1 && line.2 == want.2 && line.3 == want.3, "\(line) is not \(want)")
        }
    }

    @Test("an occurrence that is not logged does not make its metadata")
    func omittedMetadataIsNotMade() {
        let recorder = LogRecorder()
        let logger = recorder.logger(level: .info)
        let warning = RepeatedWarning("Output refused for good", limit: 2, interval: .seconds(10))
        let made = Mutex(0)
        func metadata() -> Logger.Metadata {
            made.withLock { $0 += 1 }
            return ["topic": "push.fcm"]
        }
        let now = ContinuousClock.now
        for _ in 0..<100 { warning.log(to: logger, at: now, metadata: metadata()) }
        #expect(made.withLock { $0 } == 2)
        #expect(recorder.lines.count == 2)
        warning.flush(to: logger)
        #expect(recorder.lines.last?.message == "Output refused for good: 98 more not logged")
    }
}
