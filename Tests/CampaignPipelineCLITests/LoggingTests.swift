import ArgumentParser
@testable import CampaignPipelineCLI
import Foundation
import Logging
import PipelineCore
import Synchronization
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
        #expect(metadata["reason"] == .string(#""unknown template 'we\"ird\\\r\nname'; é ✓""#), "quoted, its quote and backslash escaped")
        #expect(metadata["nested"] == .dictionary(["ids": .array([.string(#""a\u{1B}[31m""#), .string(#""b\u{2028}c""#)])]))
        #expect(metadata["number"] == .string("42"))
        #expect(!message.contains("\n") && !"\(metadata)".contains("\n"))
    }

    /// Found by review: the text format writes metadata as `key=value` pairs, unquoted, so an event id with spaces
    /// and `=` in it added pairs of its own to the line (`eventId=1111 offset=424242 … [PipelineRuntime] Event
    /// accepted`), and a backslash and `n` typed into an event read as an escaped line break.
    @Test("metadata values with a space, = or \" in them, or anything escaped, are quoted; plain ones are not")
    func metadataValuesQuoted() {
        let recorder = LogRecorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(recorder.handler()) }
        logger.warning(
            "Event rejected",
            metadata: [
                "eventId": "1111 offset=424242 [PipelineRuntime] Event accepted",
                "typed": #"a\nb"#,
                "empty": "",
                "plain": "campaign.sends/0,campaign.sends/1",
                "number": "\(42)",
            ]
        )
        let metadata = recorder.lines.first?.metadata ?? [:]
        #expect(metadata["eventId"] == .string(#""1111 offset=424242 [PipelineRuntime] Event accepted""#))
        #expect(metadata["typed"] == .string(#""a\\nb""#), "a typed backslash is not an escape")
        #expect(metadata["empty"] == .string(#""""#))
        #expect(metadata["plain"] == .string("campaign.sends/0,campaign.sends/1"))
        #expect(metadata["number"] == .string("42"))
        #expect(EscapingLogHandler<StreamLogHandler>.escaped(#"C:\path"#) == #"C:\\path"#, "messages escape backslashes too")
    }

    @Test("LOG_LEVEL and LOG_FORMAT set but empty mean their defaults, as the configuration's variables do")
    func emptyVariablesAreUnset() throws {
        let options = try LoggingOptions.parse([])
        #expect(try options.format(environment: ["LOG_FORMAT": ""]) == .text)
        #expect(try options.format(environment: ["LOG_FORMAT": "JSON"]) == .json)
        #expect(throws: (any Error).self) { try options.format(environment: ["LOG_FORMAT": "xml"]) }
        #expect(try options.level(environment: ["LOG_LEVEL": ""]) == .info)
        #expect(try options.level(environment: ["LOG_LEVEL": "debug"]) == .debug)
        #expect(throws: (any Error).self) { try options.level(environment: ["LOG_LEVEL": "loud"]) }
    }

    @Test("the error a log call names is escaped too, under error.message and error.type")
    func errorEscaped() {
        struct Failure: Error, CustomStringConvertible {
            var description: String { "bad\nFAKE critical: forged" }
        }
        let recorder = LogRecorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(recorder.handler()) }
        logger.error("Send failed", error: Failure())
        let lines = recorder.lines
        #expect(lines.count == 1)
        #expect(lines.first?.metadata["error.message"] == .string(#""bad\nFAKE critical: forged""#))
        #expect(lines.first?.metadata["error.type"]?.description.contains("Failure") == true)
    }

    @Test("--log-format json: one JSON object per line with time, level, label, source, message and metadata")
    func jsonLines() throws {
        let lines = Mutex<[[UInt8]]>([])
        var handler = JSONLogHandler(label: "campaign-pipeline") { line in lines.withLock { $0.append(line) } }
        handler[metadataKey: "instance"] = "a"
        let logger = Logger(label: "campaign-pipeline") { _ in handler }
        logger.warning(
            "Event rejected: template 'x\nFAKE error: line'",
            metadata: ["reason": "bad \"field\"", "nested": ["ids": ["1", "2"]], "count": "\(3)", "instance": "b"]
        )
        logger.info("Started")
        let written = lines.withLock { $0 }
        #expect(written.count == 2)
        for line in written {
            #expect(line.last == UInt8(ascii: "\n") && line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") }, "one line each")
        }
        let first = try JSONObject(parsing: Array(written[0].dropLast()))
        #expect(first.keys == ["timestamp", "level", "label", "source", "message", "metadata"])
        #expect(first["level"] == "warning")
        #expect(first["label"] == "campaign-pipeline")
        #expect(first["source"] == "CampaignPipelineCLITests")
        #expect(first["message"] == "Event rejected: template 'x\nFAKE error: line'", "the text, escaped only as JSON escapes it")
        let metadata = try #require(first["metadata"]?.objectValue)
        #expect(metadata.keys == ["count", "instance", "nested", "reason"], "sorted")
        #expect(metadata["instance"] == "b", "the event's metadata wins over the logger's")
        #expect(metadata["nested"] == .object(["ids": .array(["1", "2"])]))
        #expect(metadata["reason"] == "bad \"field\"")
        let time = try #require(first["timestamp"]?.stringValue)
        let stamped = try Timestamp(rfc3339: time)
        #expect(abs(Double(stamped.secondsSince1970) - Date().timeIntervalSince1970) < 60, "\(time)")
        let second = try JSONObject(parsing: Array(written[1].dropLast()))
        #expect(second["message"] == "Started")
        #expect(second["metadata"] == .object(["instance": "a"]))
    }

    /// The time was written as Timestamp writes it, with the fraction's trailing zeros dropped: `…00.12Z`, and `…00Z`
    /// on the second, so the lines had no fixed layout and did not sort by time as text.
    @Test("JSON lines: the time has three fraction digits on every line")
    func jsonTimestampMilliseconds() throws {
        let second = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(JSONLogHandler.timestamp(second) == "2027-01-15T08:00:00.000Z")
        #expect(JSONLogHandler.timestamp(second.addingTimeInterval(0.5)) == "2027-01-15T08:00:00.500Z")
        #expect(JSONLogHandler.timestamp(second.addingTimeInterval(0.125)) == "2027-01-15T08:00:00.125Z")
        #expect(JSONLogHandler.timestamp(second.addingTimeInterval(0.015625)) == "2027-01-15T08:00:00.015Z", "to the millisecond, down")
        let parsed = try Timestamp(rfc3339: JSONLogHandler.timestamp(second.addingTimeInterval(0.5)))
        #expect(parsed == Timestamp(secondsSince1970: 1_800_000_000, nanoseconds: 500_000_000))
    }

    /// swift-log 1.16 hands a log call's `error:` to the handler apart from the metadata (`LogEvent.error`);
    /// StreamLogHandler, the text format, shows it as `error.message` and `error.type`, and the JSON lines dropped it.
    @Test("JSON lines: the error a log call names is written, as the text format shows it")
    func jsonLinesShowTheError() throws {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "refused by \"the broker\"" }
        }
        let lines = Mutex<[[UInt8]]>([])
        let handler = JSONLogHandler(label: "campaign-pipeline") { line in lines.withLock { $0.append(line) } }
        let logger = Logger(label: "campaign-pipeline") { _ in handler }
        logger.error("Commit failed", error: Refused(), metadata: ["partition": "3"])
        let line = try #require(lines.withLock { $0 }.first)
        let metadata = try #require(try JSONObject(parsing: Array(line.dropLast()))["metadata"]?.objectValue)
        #expect(metadata["error.message"] == "refused by \"the broker\"")
        #expect(metadata["error.type"]?.stringValue?.hasSuffix("Refused") == true, "\(String(describing: metadata["error.type"]))")
        #expect(metadata["partition"] == "3")
    }
}
