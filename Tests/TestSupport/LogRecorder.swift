package import Logging
import Synchronization

/// Keeps every line logged through its ``handler(level:)``: level, message and metadata, for tests of what is logged.
package final class LogRecorder: Sendable {
    /// One logged line.
    package struct Line: Sendable {
        package var level: Logger.Level
        package var message: String
        package var metadata: Logger.Metadata
    }

    private let recorded = Mutex<[Line]>([])

    package init() {}

    /// The lines logged so far, in order.
    package var lines: [Line] { recorded.withLock { $0 } }

    /// A logger whose lines at `level` and above are kept here.
    package func logger(label: String = "test", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { _ in self.handler(level: level) }
        logger.logLevel = level
        return logger
    }

    /// A handler that keeps the lines at `level` and above here.
    package func handler(level: Logger.Level = .trace) -> Handler {
        Handler(recorder: self, logLevel: level)
    }

    /// A handler that hands what it is given to its recorder.
    package struct Handler: LogHandler {
        let recorder: LogRecorder
        package var metadata: Logger.Metadata = [:]
        package var logLevel: Logger.Level

        init(recorder: LogRecorder, logLevel: Logger.Level) {
            self.recorder = recorder
            self.logLevel = logLevel
        }

        package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        package func log(event: LogEvent) {
            let line = Line(level: event.level, message: event.message.description, metadata: metadata.merging(event.metadata ?? [:]) { $1 })
            recorder.recorded.withLock { $0.append(line) }
        }
    }
}
