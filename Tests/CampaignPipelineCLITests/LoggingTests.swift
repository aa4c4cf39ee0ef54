@testable import CampaignPipelineCLI
import Logging
import Testing
import TestSupport

@Suite("Log lines cannot be forged by text from events")
struct LoggingTests {
    @Test("the command's loggers write through the escaping handler")
    func commandLoggersEscape() {
        #expect(LoggingBootstrap.handler(label: "campaign-pipeline") is EscapingLogHandler<StreamLogHandler>)
    }

    @Test("control characters of the message and of metadata (nested too) are escaped; other text is kept")
    func controlCharactersEscaped() {
        let recorder = LogRecorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(recorder.handler()) }
        logger.warning(
            "Event rejected: template 'x\nFAKE error: line'",
            metadata: [
                "reason": "unknown template 'we\"ird\\\r\nname'; é ✓",
                "nested": ["ids": ["a\u{1B}[31m", "b\u{2028}c"]],
                "number": "\(42)",
            ]
        )
        let lines = recorder.lines
        #expect(lines.count == 1)
        let (message, metadata) = (lines[0].message, lines[0].metadata)
        #expect(message == #"Event rejected: template 'x\nFAKE error: line'"#)
        #expect(metadata["reason"] == .string(#"unknown template 'we"ird\\r\nname'; é ✓"#))
        #expect(metadata["nested"] == .dictionary(["ids": .array([.string(#"a\u{1B}[31m"#), .string(#"b\u{2028}c"#)])]))
        #expect(metadata["number"] == .string("42"))
        #expect(!message.contains("\n") && !"\(metadata)".contains("\n"))
    }
}
