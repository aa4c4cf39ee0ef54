/// An instant, as seconds and nanoseconds since 1970-01-01T00:00:00Z, read from and written as
/// RFC 3339 text (see ``init(rfc3339:)`` and ``rfc3339``).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since the Unix epoch (negative before 1970).
    public var secondsSince1970: Int64
    /// The fraction of the second, `0..<1_000_000_000`.
    public var nanoseconds: Int32

    /// Creates an instant.
    public init(secondsSince1970: Int64, nanoseconds: Int32 = 0) {
        self.secondsSince1970 = secondsSince1970
        self.nanoseconds = nanoseconds
    }

    /// Whole epoch seconds, the form push payloads use (`adb_tmr_end`, `adb_rem_ts`); the fraction
    /// is dropped (rounded toward the past).
    public var epochSeconds: Int64 { secondsSince1970 }

    /// The instant with its fraction cut to whole milliseconds, so it is written with at most three fraction digits:
    /// some readers of RFC 3339 take no more (Python's `datetime.fromisoformat` before 3.11 takes three or six).
    public var truncatedToMilliseconds: Timestamp {
        Timestamp(secondsSince1970: secondsSince1970, nanoseconds: nanoseconds - nanoseconds % 1_000_000)
    }

    /// This instant moved by `seconds`.
    public func adding(seconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: secondsSince1970 &+ seconds, nanoseconds: nanoseconds)
    }

    /// This instant moved by `duration` (to the past when it is negative), to the nanosecond.
    public func adding(_ duration: Duration) -> Timestamp {
        let (seconds, attoseconds) = duration.components
        var nanoseconds = Int64(self.nanoseconds) + attoseconds / 1_000_000_000
        var whole = secondsSince1970 &+ seconds
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            whole &+= 1
        } else if nanoseconds < 0 {
            nanoseconds += 1_000_000_000
            whole &-= 1
        }
        return Timestamp(secondsSince1970: whole, nanoseconds: Int32(nanoseconds))
    }

    /// The time from `earlier` to this instant (negative when `earlier` is the later one).
    public func duration(since earlier: Timestamp) -> Duration {
        .seconds(secondsSince1970 &- earlier.secondsSince1970) + .nanoseconds(Int64(nanoseconds) - Int64(earlier.nanoseconds))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        (lhs.secondsSince1970, lhs.nanoseconds) < (rhs.secondsSince1970, rhs.nanoseconds)
    }

    /// The RFC 3339 form, ``rfc3339``.
    public var description: String { rfc3339 }
}
