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
        var start: ContinuousClock.Instant
        var logged = 0
        var omitted = 0
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
            guard var window = windows[kind] ?? (windows.count < maxKinds ? Window(start: now) : nil) else { return 0 }
            if now - window.start >= interval {
                window.start = now
                window.logged = 0
            }
            defer { windows[kind] = window }
            guard window.logged < limit else {
                window.omitted += 1
                window.lastOmitted = message
                return nil
            }
            window.logged += 1
            defer { window.omitted = 0 }
            return window.omitted
        }
    }

    /// The kinds with lines held back since their last one logged at their level, by facility; their counts start
    /// again from zero.
    func flush() -> [Omitted] {
        windows.withLock { windows in
            var omitted: [Omitted] = []
            for (kind, window) in windows where window.omitted > 0 {
                omitted.append(Omitted(facility: kind.facility, message: window.lastOmitted, count: window.omitted))
                windows[kind]?.omitted = 0
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
