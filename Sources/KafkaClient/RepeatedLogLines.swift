import Synchronization

/// Limits how many of librdkafka's warnings of one facility are logged at their level: during an outage it repeats
/// some for as long as the outage lasts (`COMMITFAIL`, once per auto-commit, every second by default), which buried
/// the lines that say something new.
///
/// Past ``limit`` lines of a facility in one ``interval``, a line is logged at debug instead (so `--log-level debug`
/// still shows every one) and counted; the next one logged at its level carries that count as
/// `omittedSinceLastLogged`.
final class RepeatedLogLines: Sendable {
    /// The most lines of one facility logged at their level in one ``interval``.
    let limit: Int
    /// How long one window of ``limit`` lines lasts.
    let interval: Duration

    private struct Window {
        var start: ContinuousClock.Instant
        var logged = 0
        var omitted = 0
    }

    private let windows = Mutex<[String: Window]>([:])

    init(limit: Int = 5, interval: Duration = .seconds(60)) {
        precondition(limit > 0, "a facility's lines must be logged at least once per interval")
        self.limit = limit
        self.interval = interval
    }

    /// Counts a line of `facility`.
    ///
    /// - Returns: `nil` when the line is over its window's limit (log it at debug); otherwise how many lines of the
    ///   facility were not logged at their level since the last one that was.
    func admit(_ facility: String, at now: ContinuousClock.Instant = .now) -> Int? {
        windows.withLock { windows in
            var window = windows[facility] ?? Window(start: now)
            if now - window.start >= interval {
                window.start = now
                window.logged = 0
            }
            defer { windows[facility] = window }
            guard window.logged < limit else {
                window.omitted += 1
                return nil
            }
            window.logged += 1
            defer { window.omitted = 0 }
            return window.omitted
        }
    }
}
