import Foundation
import Logging
import PipelineCore
import Synchronization

/// Writes each log event as one line of JSON, for log collectors (`--log-format json`):
///
/// ```json
/// {"timestamp":"2026-11-26T10:00:00.120Z","level":"warning","label":"campaign-pipeline","source":"PipelineRuntime","message":"Event rejected","metadata":{"eventId":"e-1","reason":"…"}}
/// ```
///
/// `metadata` (the logger's, its provider's and the event's, the event's winning, then the error a log call names as
/// `error.message` and `error.type`, as `StreamLogHandler` shows it) is left out when empty; its keys are sorted.
/// Text from events is escaped as JSON escapes it, so a line break in it cannot forge a line.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    private let write: @Sendable ([UInt8]) -> Void

    /// - Parameter write: takes each line, its newline included (standard error by default).
    init(label: String, metadataProvider: Logger.MetadataProvider? = nil, write: @escaping @Sendable ([UInt8]) -> Void = Self.standardError) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        if let error = event.error { merged.merge(.describing(error)) { $1 } }
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.member("timestamp", Self.timestamp(Date()))
        writer.member("level", event.level.rawValue)
        writer.member("label", label)
        writer.member("source", event.source)
        writer.member("message", event.message.description)
        if !merged.isEmpty {
            writer.key("metadata")
            writer.write(Self.json(merged))
        }
        writer.endObject()
        var line = writer.bytes
        line.append(UInt8(ascii: "\n"))
        write(line)
    }

    /// Metadata as a JSON object, its keys sorted.
    static func json(_ metadata: Logger.Metadata) -> JSONValue {
        var object = JSONObject()
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { object[key] = json(value) }
        return .object(object)
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .dictionary(let metadata): json(metadata)
        case .array(let values): .array(values.map(json))
        }
    }

    /// `date` to the millisecond, always with three fraction digits (`2026-11-26T10:00:00.120Z`, not `…00.12Z`, and
    /// `…00.000Z` on the second): every line's time has the same layout, which collectors parsing a fixed format
    /// read, and the lines sort by time as text (`…00Z` sorted after `…00.5Z`).
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = String(milliseconds - seconds * 1000)
        var text = Timestamp(secondsSince1970: seconds).rfc3339  // no fraction: `…:SSZ`
        text.removeLast()
        return text + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
    }

    private static let standardErrorLock = Mutex(())

    /// Writes a line to standard error, one line at a time. A line that cannot be written (a full disk, an error
    /// of the device) is lost, as with swift-log's `StreamLogHandler`: `FileHandle.write(_:)` would trap instead,
    /// stopping the service on its next log line.
    @Sendable static func standardError(_ line: [UInt8]) {
        standardErrorLock.withLock { _ in try? FileHandle.standardError.write(contentsOf: line) }
    }
}
