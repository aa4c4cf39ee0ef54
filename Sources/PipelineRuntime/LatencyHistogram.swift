/// Counts of durations in fixed buckets, as a Prometheus histogram: how long events took from their record's timestamp
/// to their terminal outcome's acknowledgement.
///
/// Recording is a short scan of ``bounds`` and two additions, under the statistics' lock (no allocation, but for one
/// copy of the counts while a scrape holds a snapshot of them).
public struct LatencyHistogram: Sendable, Hashable {
    /// The buckets' upper bounds in seconds (each bucket holds the durations at most its bound), from 5 ms, where an
    /// outcome on a nearby cluster lands, to an hour, where a send read again after an outage can.
    public static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600]

    /// The durations per bucket of ``bounds``, not cumulative; the last count is of those above every bound.
    public private(set) var counts = [Int](repeating: 0, count: Self.bounds.count + 1)
    /// The sum of the durations recorded, in seconds.
    public private(set) var sum = 0.0
    /// How many durations were recorded.
    public var count: Int { counts.reduce(0, +) }

    /// An empty histogram.
    public init() {}

    /// Counts one duration in seconds; a negative one (the producer's clock ahead of this host's) counts as 0.
    public mutating func record(seconds: Double) {
        let seconds = max(0, seconds)
        sum += seconds
        var bucket = 0
        while bucket < Self.bounds.count, seconds > Self.bounds[bucket] { bucket += 1 }
        counts[bucket] += 1
    }

    /// The cumulative counts Prometheus's `_bucket` series give: for each bound, the durations at most it; then all.
    public var cumulativeCounts: [(upperBound: Double, count: Int)] {
        var total = 0
        var result: [(upperBound: Double, count: Int)] = []
        for (index, bound) in (Self.bounds + [.infinity]).enumerated() {
            total += counts[index]
            result.append((bound, total))
        }
        return result
    }
}
