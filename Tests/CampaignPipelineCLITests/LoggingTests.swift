@testable import CampaignPipelineCLI
import Logging
import Synchronization
import Testing

@Suite("Log lines cannot be forged by text from events")
struct LoggingTests {
    /// Keeps what it is handed.
    final class Recorder: Sendable {
        let events = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
    }

    struct RecordingHandler: LogHandler {
        let recorder: Recorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorder.events.withLock { $0.append((event.message.description, event.metadata ?? [:])) }
        }
    }

    @Test("the command's loggers write through the escaping handler")
    func commandLoggersEscape() {
        #expect(LoggingBootstrap.handler(label: "campaign-pipeline") is EscapingLogHandler<StreamLogHandler>)
    }

    @Test("control characters of the message and of metadata (nested too) are escaped; other text is kept")
    func controlCharactersEscaped() {
        let recorder = Recorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(RecordingHandler(recorder: recorder)) }
        logger.warning(
            "Event rejected: template 'x\nFAKE error: line'",
            metadata: [
                "reason": "unknown template 'we\"ird\\\r\nname'; é ✓",
                "nested": ["ids": ["a\u{1B}[31m", "b\u{2028}c"]],
                "number": "\(42)",
            ]
        )
        let events = recorder.events.withLock { $0 }
        #expect(events.count == 1)
        let (message, metadata) = events[0]
        #expect(message == #"Event rejected: template 'x\nFAKE error: line'"#)
        #expect(metadata["reason"] == .string(#"unknown template 'we"ird\\r\nname'; é ✓"#))
        #expect(metadata["nested"] == .dictionary(["ids": .array([.string(#"a\u{1B}[31m"#), .string(#"b\u{2028}c"#)])]))
        #expect(metadata["number"] == .string("42"))
        #expect(!message.contains("\n") && !"\(metadata)".contains("\n"))
    }
}
