import Foundation
@testable import KafkaClient
import Testing

@Suite("librdkafka's warnings of one kind are logged at their level at most so many times a minute")
struct RepeatedLogLinesTests {
    static let commitFailed =
        "[thrd:main]: Offset commit (cgrp auto commit timer) failed for 5/6 partition(s) in join-state wait-unassign-to-complete: Local: Waiting for coordinator: sends[0]@12(Local: Waiting for coordinator)"

    @Test("past the limit a kind's lines are held back and counted; the next window's first line carries the count")
    func limitPerKindAndWindow() {
        let lines = RepeatedLogLines(limit: 2, interval: .seconds(60))
        let start = ContinuousClock.now
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start) == 0)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(1)) == 0)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(2)) == nil)
        // The same kind: only its numbers and its detail differ.
        let sixOfSix = Self.commitFailed.replacingOccurrences(of: "5/6", with: "6/6") + ", sends[1]@8(Local: Waiting for coordinator)"
        #expect(lines.admit("COMMITFAIL", sixOfSix, at: start + .seconds(59)) == nil)
        // Another facility, or another text, is a kind of its own.
        #expect(lines.admit("SESSTMOUT", Self.commitFailed, at: start + .seconds(59)) == 0)
        #expect(lines.admit("COMMITFAIL", "[thrd:main]: Offset commit (manual) failed: Local: Waiting for coordinator", at: start + .seconds(59)) == 0)
        // A new window: logged, with the two held back.
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(60)) == 2)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(61)) == 0)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(62)) == nil)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(200)) == 1)
    }

    /// Found by review: a one-off burst past the limit (a warning for each of eight ignored properties, all of
    /// facility CONFWARN) lost its last three for good, with no count. Each property's warning is a kind of its own
    /// now, and what is held back is handed over when the client closes.
    @Test("different warnings of one facility are each logged; what is held back when the client closes is handed over")
    func distinctLinesAndFlush() {
        let lines = RepeatedLogLines(limit: 1, interval: .seconds(60))
        let start = ContinuousClock.now
        for property in ["fetch.max.bytes", "fetch.min.bytes", "check.crcs"] {
            let warning = "Configuration property \(property) is a consumer property and will be ignored by this producer instance"
            #expect(lines.admit("CONFWARN", warning, at: start) == 0, "\(property)")
        }
        #expect(lines.flush().isEmpty)
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start) == 0)
        let sixOfSix = Self.commitFailed.replacingOccurrences(of: "5/6", with: "6/6")
        #expect(lines.admit("COMMITFAIL", Self.commitFailed, at: start + .seconds(1)) == nil)
        #expect(lines.admit("COMMITFAIL", sixOfSix, at: start + .seconds(2)) == nil)
        #expect(lines.flush() == [RepeatedLogLines.Omitted(facility: "COMMITFAIL", message: sixOfSix, count: 2)])
        #expect(lines.flush().isEmpty, "handed over once")
    }

    @Test("a kind is the text up to its detail, without the thread's name, with its numbers as #")
    func shapes() {
        #expect(RepeatedLogLines.shape(of: Self.commitFailed) == "Offset commit (cgrp auto commit timer) failed for #/# partition(s) in join-state wait-unassign-to-complete")
        #expect(RepeatedLogLines.shape(of: "Configuration property check.crcs is a consumer property") == "Configuration property check.crcs is a consumer property")
        #expect(RepeatedLogLines.shape(of: "[thrd:app]: 127.0.0.1:40673/1: Connect failed") == "#.#.#.#:#/#")
    }

    @Test("past the most kinds followed, lines of new kinds are all logged")
    func kindsAreBounded() {
        let lines = RepeatedLogLines(limit: 1, interval: .seconds(60), maxKinds: 2)
        let start = ContinuousClock.now
        #expect(lines.admit("A", "one", at: start) == 0)
        #expect(lines.admit("B", "two", at: start) == 0)
        #expect(lines.admit("C", "three", at: start) == 0)
        #expect(lines.admit("C", "three", at: start) == 0, "not followed, so never held back")
        #expect(lines.admit("A", "one", at: start) == nil)
    }
}
