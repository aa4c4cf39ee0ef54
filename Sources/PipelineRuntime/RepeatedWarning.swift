import KafkaClient
import Logging
import Synchronization

/// A warning that can come once per record (an event rejected, an output refused for good), logged in full at most
/// ``limit`` times per ``interval``.
///
/// Past the limit, an occurrence is logged at debug instead (so `--log-level debug` still shows every one) and
/// counted; the next one logged as a warning carries that count as `omittedSinceLastLogged`, and ``flush(to:)`` logs
/// a count still left when the pipeline stops. A producer that sends nothing but broken events then costs a line a
/// second, not a line per event (each of which costs a formatted write), and the lines still show what is wrong. The
/// exact counts are in the statistics, the analytics topic and `/metrics`.
final class RepeatedWarning: Sendable {
    /// The warning's message.
    let message: Logger.Message
    /// The most occurrences logged as warnings in one ``interval``.
    let limit: Int
    /// How long one window of ``limit`` warnings lasts.
    let interval: Duration

    private let window = Mutex(RepeatedLineWindow())

    /// A warning with `message`, logged at most `limit` times per `interval`.
    init(_ message: Logger.Message, limit: Int = 10, interval: Duration = .seconds(10)) {
        precondition(limit > 0, "a repeated warning must be logged at least once per interval")
        self.message = message
        self.limit = limit
        self.interval = interval
    }

    /// Logs one occurrence: as a warning while this window has room, otherwise at debug. `metadata` is made only when
    /// a line is written.
    func log(to logger: Logger, at now: ContinuousClock.Instant = .now, metadata: @autoclosure () -> Logger.Metadata) {
        let omitted = window.withLock { $0.admit(at: now, limit: limit, interval: interval) }
        guard let omitted else {
            logger.debug(message, metadata: metadata())
            return
        }
        var lineMetadata = metadata()
        if omitted > 0 { lineMetadata["omittedSinceLastLogged"] = "\(omitted)" }
        logger.warning(message, metadata: lineMetadata)
    }

    /// Logs how many occurrences were not logged as warnings since the last one that was, if any.
    func flush(to logger: Logger) {
        let omitted = window.withLock { $0.takeOmitted() }
        guard omitted > 0 else { return }
        logger.warning("\(message): \(omitted) more not logged", metadata: ["omittedSinceLastLogged": "\(omitted)"])
    }
}
