import Foundation
import Synchronization

/// Limits how many times librdkafka's warnings of one kind are logged at their level: during an outage it repeats
/// some for as long as the outage lasts (`COMMITFAIL`, once per background commit, every second by default), which
/// buried the lines that say something new.
///
/// A kind is the facility and the text up to its detail, with its numbers left out (``shape(of:)``: "failed for 5/6
/// partition(s)" and "6/6" are one kind; the warnings about two different properties are two). Past ``limit`` lines
/// of a kind in one ``interval``, a line is logged at debug instead (so `--log-level debug` still shows every one) and
/// counted; the next one logged at its level carries that count as `omittedSinceLastLogged`, and ``flush()`` hands
/// over the counts still open when the client closes.
final class RepeatedLogLines: Sendable {
    /// The most lines of one kind logged at their level in one ``interval``.
    let limit: Int
    /// How long one window of ``limit`` lines lasts.
    let interval: Duration
    /// The most kinds followed; lines of kinds past it are all logged at their level.
    let maxKinds: Int

    /// A kind's lines held back since the last one logged at its level.
    struct Omitted: Equatable, Sendable {
        var facility: String
        /// The last line held back.
        var message: String
        var count: Int
    }

    private struct Kind: Hashable {
        var facility: String
        var shape: String
    }

    private struct Window {
        var lines = RepeatedLineWindow()
        var lastOmitted = ""
    }

    private let windows = Mutex<[Kind: Window]>([:])

    init(limit: Int = 5, interval: Duration = .seconds(60), maxKinds: Int = 256) {
        precondition(limit > 0, "a kind of line must be logged at least once per interval")
        self.limit = limit
        self.interval = interval
        self.maxKinds = maxKinds
    }

    /// Counts a line.
    ///
    /// - Returns: `nil` when the line is over its kind's limit in this window (log it at debug); otherwise how many
    ///   lines of the kind were not logged at their level since the last one that was.
    func admit(_ facility: String, _ message: String, at now: ContinuousClock.Instant = .now) -> Int? {
        let kind = Kind(facility: facility, shape: Self.shape(of: message))
        return windows.withLock { windows in
            guard var window = windows[kind] ?? (windows.count < maxKinds ? Window() : nil) else { return 0 }
            defer { windows[kind] = window }
            let omitted = window.lines.admit(at: now, limit: limit, interval: interval)
            if omitted == nil { window.lastOmitted = message }
            return omitted
        }
    }

    /// The kinds with lines held back since their last one logged at their level, by facility; their counts start
    /// again from zero.
    func flush() -> [Omitted] {
        windows.withLock { windows in
            var omitted: [Omitted] = []
            for (kind, var window) in windows {
                let count = window.lines.takeOmitted()
                guard count > 0 else { continue }
                windows[kind] = window
                omitted.append(Omitted(facility: kind.facility, message: window.lastOmitted, count: count))
            }
            return omitted.sorted { ($0.facility, $0.message) < ($1.facility, $1.message) }
        }
    }

    /// What makes lines one kind: the text up to its detail (librdkafka writes "what happened: why: which", and
    /// a failed commit lists the partitions it failed for), without the thread name it starts with, and with each
    /// run of digits written as `#`.
    static func shape(of message: String) -> String {
        var text = Substring(message)
        if text.hasPrefix("[thrd:"), let end = text.range(of: "]: ") {
            text = text[end.upperBound...]
        }
        if let detail = text.range(of: ": ") {
            text = text[..<detail.lowerBound]
        }
        var shape = ""
        var inNumber = false
        for scalar in text.unicodeScalars {
            if ("0"..."9").contains(scalar) {
                if !inNumber { shape.append("#") }
                inNumber = true
            } else {
                shape.unicodeScalars.append(scalar)
                inNumber = false
            }
        }
        return shape
    }
}

/// The window of one kind of repeated log line: a window starts at the first line past the previous one's end and
/// lasts an interval; in it, the first so many lines are logged and the rest held back and counted. Shared by the
/// limits on librdkafka's warnings (``RepeatedLogLines``) and on the pipeline's per-record warnings.
package struct RepeatedLineWindow: Sendable {
    private var start: ContinuousClock.Instant?
    private var logged = 0
    private var omitted = 0

    package init() {}

    /// Counts a line at `now`.
    ///
    /// - Returns: `nil` when the window already logged `limit` lines (this one is held back and counted); otherwise
    ///   how many were held back since the last one logged (the count starts again from zero).
    package mutating func admit(at now: ContinuousClock.Instant, limit: Int, interval: Duration) -> Int? {
        if let start, now - start < interval {
            guard logged < limit else {
                omitted += 1
                return nil
            }
        } else {
            start = now
            logged = 0
        }
        logged += 1
        defer { omitted = 0 }
        return omitted
    }

    /// How many lines were held back since the last one logged; the count starts again from zero.
    package mutating func takeOmitted() -> Int {
        defer { omitted = 0 }
        return omitted
    }
}
