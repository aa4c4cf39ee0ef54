import ArgumentParser
import Foundation
import Logging
import Synchronization

/// The `--log-level` option every long-running subcommand shares.
struct LoggingOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error or critical (env LOG_LEVEL).",
            valueName: "level"
        )
    )
    var logLevel: String?

    /// Refuses an unknown `--log-level` while the arguments are parsed, so the message comes with the subcommand's
    /// usage.
    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level: '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// Bootstraps swift-log once (to stderr) and returns the root logger.
    func makeLogger(label: String) throws -> Logger {
        let text = logLevel ?? ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw CommandError("LOG_LEVEL: '\(text)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        LoggingBootstrap.once()
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// Calls `LoggingSystem.bootstrap` at most once per process (it traps on a second call).
private enum LoggingBootstrap {
    private static let done = Mutex(false)

    static func once() {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        if first {
            LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
        }
    }
}
