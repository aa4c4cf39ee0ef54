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

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log line format: text, or json (one JSON object per line, for log collectors; env LOG_FORMAT). Default text.",
            valueName: "format"
        )
    )
    var logFormat: String?

    /// The formats of ``logFormat``.
    enum Format: String, CaseIterable {
        /// swift-log's text lines: time, level, label, metadata, source, message.
        case text
        /// One JSON object per line (``JSONLogHandler``).
        case json
    }

    /// Refuses an unknown `--log-level` or `--log-format` while the arguments are parsed, so the message comes with
    /// the subcommand's usage.
    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level: '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        if let logFormat, Format(rawValue: logFormat.lowercased()) == nil {
            throw ValidationError("--log-format: '\(logFormat)' is not one of text, json")
        }
    }

    /// Bootstraps swift-log once (to stderr) and returns the root logger.
    func makeLogger(label: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Logger {
        let level = try level(environment: environment)
        LoggingBootstrap.once(format: try format(environment: environment))
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }

    /// The level asked for: `--log-level`, else `LOG_LEVEL` (empty counts as unset, as the configuration's variables
    /// do), else info.
    func level(environment: [String: String]) throws -> Logger.Level {
        let text = logLevel ?? environment["LOG_LEVEL"].flatMap { $0.isEmpty ? nil : $0 } ?? "info"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw CommandError.configuration("LOG_LEVEL: '\(text)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        return level
    }

    /// The format asked for: `--log-format`, else `LOG_FORMAT` (empty counts as unset), else text.
    func format(environment: [String: String]) throws -> Format {
        let text = logFormat ?? environment["LOG_FORMAT"].flatMap { $0.isEmpty ? nil : $0 } ?? "text"
        guard let format = Format(rawValue: text.lowercased()) else {
            throw CommandError.configuration("LOG_FORMAT: '\(text)' is not one of text, json")
        }
        return format
    }
}

/// Calls `LoggingSystem.bootstrap` at most once per process (it traps on a second call).
enum LoggingBootstrap {
    private static let done = Mutex(false)

    /// The handler of every logger, on standard error: text with the text from events escaped
    /// (``EscapingLogHandler``), or JSON lines (``JSONLogHandler``).
    static func handler(label: String, format: LoggingOptions.Format = .text) -> any LogHandler {
        switch format {
        case .text: EscapingLogHandler(StreamLogHandler.standardError(label: label))
        case .json: JSONLogHandler(label: label)
        }
    }

    static func once(format: LoggingOptions.Format = .text) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        if first {
            LoggingSystem.bootstrap { label in handler(label: label, format: format) }
        }
    }
}

/// Hands log events to `inner` with the control characters and backslashes of their message and metadata escaped
/// (`\n`, `\u{1B}`, `\\`): messages and metadata carry text from events (ids, template names, reasons), and a line
/// break in it would forge a log line of its own. A metadata value with a space, `=` or `"` in it, or anything
/// escaped, is also quoted (`reason="unknown template 'x y'"`): the text format writes metadata as `key=value` pairs,
/// which an event's text could otherwise add to.
struct EscapingLogHandler<Inner: LogHandler>: LogHandler {
    private var inner: Inner

    init(_ inner: Inner) {
        self.inner = inner
    }

    func log(event: LogEvent) {
        var escaped = event
        escaped.message = "\(Self.escaped(event.message.description))"
        escaped.metadata = event.metadata.map(Self.quoted)
        if let error = event.error {
            // Under the keys `StreamLogHandler` shows it with, escaped like the rest.
            escaped.metadata = (escaped.metadata ?? [:]).merging(Self.quoted(.describing(error))) { $1 }
            escaped.error = nil
        }
        inner.log(event: escaped)
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    /// `text` with its control characters and backslashes written as escapes.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || $0 == "\\" }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\\": result += "\\\\"
            case _ where isControl(scalar): result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `text` escaped, and in quotes (with its own quotes escaped) when it is empty, has a space, `=` or `"`, or
    /// anything escaped: one `key=value` pair of the text format whatever it holds.
    static func quoted(_ text: String) -> String {
        let escapedText = escaped(text)
        guard escapedText.isEmpty || escapedText != text || text.unicodeScalars.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" }) else {
            return text
        }
        return "\"" + escapedText.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func quoted(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues(quoted)
    }

    static func quoted(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(quoted(text))
        case .stringConvertible(let convertible): .string(quoted(convertible.description))
        case .dictionary(let metadata): .dictionary(quoted(metadata))
        case .array(let values): .array(values.map(quoted))
        }
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

extension Logger.Metadata {
    /// A log call's error as swift-log's `StreamLogHandler` shows it: `error.message` and `error.type`.
    static func describing(_ error: any Error) -> Logger.Metadata {
        ["error.message": "\(error)", "error.type": "\(String(reflecting: type(of: error)))"]
    }
}
