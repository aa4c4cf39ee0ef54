public import Foundation
import PipelineCore
import Synchronization

/// Counts of what the pipeline did, for the run summary, and one sample payload per template and platform.
public final class PipelineStatistics: Sendable {
    /// A point-in-time copy of the counts.
    public struct Snapshot: Sendable {
        /// Events read, by `template/platform` (`unknown` where the event did not say or could not be read).
        public var eventsIn: [String: Int] {
            var result: [String: Int] = [:]
            for (key, tally) in inputs { result[key.description, default: 0] += tally.count }
            return result
        }
        /// Events rendered with at least one render warning (``RenderWarning``: a content key the template did not
        /// read, a missing personalization attribute, a `custom` key left out, a text past the platform's guideline),
        /// by `template/platform`; each was still sent.
        public var eventsWithWarnings: [String: Int] {
            var result: [String: Int] = [:]
            for (key, tally) in inputs where tally.warned > 0 { result[key.description, default: 0] += tally.warned }
            return result
        }
        /// Events read and the first payload rendered, by template and platform: counted without building a key
        /// string per event, and with one lookup of the key.
        var inputs: [InputKey: InputTally] = [:]
        /// Terminal outcomes written, by analytics type (acknowledged by Kafka).
        public var outcomes: [AnalyticsEvent.Kind: Int] = [:]
        /// Expired messages by cause.
        public var expiredByCause: [AnalyticsEvent.ExpiryCause: Int] = [:]
        /// Failed and rejected messages by the reason code of their record (`invalid_token`, `missing_field`, …).
        public var outcomeReasons: [AnalyticsEvent.Kind: [String: Int]] = [:]
        /// Timer expiries emitted after delivery (`push.expired` cause `timer` that follows a `push.delivered`;
        /// not counted in ``outcomes``, which holds one terminal outcome per input).
        public var timersFired = 0
        /// Outputs the cluster did not take (not acknowledged within `message.timeout.ms`, or refused) and that
        /// were queued to be sent again: each output once, however many of its attempts failed.
        public var outputsRetried = 0
        /// Records of the sends topic deleted (by retention, or a deletion of records) before the pipeline read them,
        /// "up to": a transaction marker deleted with them is counted too. They get no outcome.
        public var recordsDeletedUnread = 0
        /// The first payload rendered per `template/platform`.
        public var samplePayloads: [String: [UInt8]] {
            var result: [String: [UInt8]] = [:]
            for (key, tally) in inputs {
                if let sample = tally.samplePayload { result[key.description] = sample }
            }
            return result
        }
        /// The first analytics event written per type.
        public var sampleAnalytics: [AnalyticsEvent.Kind: [UInt8]] = [:]

        /// When the first event was read.
        public var firstInputAt: Date?
        /// When the last terminal outcome was acknowledged.
        public var lastOutcomeAt: Date?
        /// Seconds from each event's record timestamp to its terminal outcome's acknowledgement (events whose record
        /// has a timestamp; timer expiries after delivery aside; a dry run's outcomes are not written, and not
        /// counted here), in buckets: `/metrics`' `campaign_pipeline_outcome_latency_seconds`.
        public var outcomeLatency = LatencyHistogram()
        /// Milliseconds from each event's record timestamp to its terminal outcome's acknowledgement (only when
        /// the statistics were created with `recordsLatency`).
        public var latenciesMilliseconds: [Double] = []

        /// The total number of events read.
        public var totalIn: Int { inputs.values.reduce(0) { $0 + $1.count } }

        /// The total number of events rendered with a warning (``eventsWithWarnings``).
        public var totalWithWarnings: Int { inputs.values.reduce(0) { $0 + $1.warned } }

        /// Events read with no terminal outcome written: in flight when the run stopped (they are read again).
        public var unfinished: Int { max(0, totalIn - outcomes.values.reduce(0, +)) }
    }

    /// The events read of one template and platform.
    struct InputTally: Sendable {
        /// How many.
        var count = 0
        /// How many rendered with a warning.
        var warned = 0
        /// The first payload rendered.
        var samplePayload: [UInt8]?

        /// Counts an event, keeping `payload` when it is the first rendered (asked for only until then).
        mutating func record(warned: Bool, _ payload: () -> [UInt8]?) {
            count += 1
            if warned { self.warned += 1 }
            if samplePayload == nil, let payload = payload() { samplePayload = payload }
        }
    }

    /// A template and platform, as read from an event.
    struct InputKey: Hashable, Sendable, CustomStringConvertible {
        var template: String?
        var platform: Platform?

        var description: String { "\(template ?? "unknown")/\(platform?.rawValue ?? "unknown")" }
    }

    private let state = Mutex(Snapshot())
    private let recordsLatency: Bool

    /// Empty statistics.
    ///
    /// - Parameter recordsLatency: keep every event's end-to-end latency (for benchmarks; it grows with the input).
    public init(recordsLatency: Bool = false) {
        self.recordsLatency = recordsLatency
    }

    /// A copy of the current counts.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// The number of terminal outcomes so far: cheap enough to poll often (a ``snapshot`` copies everything, and
    /// the next recorded latency then copies the whole latency list).
    public var outcomeCount: Int { state.withLock { $0.outcomes.values.reduce(0, +) } }

    /// Events read, outcomes by kind and timer expiries so far, for a progress line: read without copying what a
    /// ``snapshot`` copies (samples, latencies).
    var progressCounts: (events: Int, outcomes: [AnalyticsEvent.Kind: Int], timerExpiries: Int) {
        state.withLock { ($0.totalIn, $0.outcomes, $0.timersFired) }
    }

    /// Counts an event read; `warned` when it rendered with a warning; `payload` is its rendered payload (kept as the
    /// sample of its template and platform when it is the first).
    ///
    /// `payload` is asked for only for the first event of its template and platform: a payload handed over for every
    /// event would count a reference each way to bytes another thread made.
    func recordInput(template: String?, platform: Platform?, warned: Bool = false, payload: @autoclosure () -> [UInt8]? = nil) {
        let key = InputKey(template: template, platform: platform)
        state.withLock { state in
            if state.firstInputAt == nil { state.firstInputAt = Date() }
            state.inputs[key, default: InputTally()].record(warned: warned, payload)
        }
    }

    /// Counts an output queued to be sent again for the first time (its later failed attempts are not counted).
    func recordRetry() {
        state.withLock { $0.outputsRetried += 1 }
    }

    /// Counts records of the sends topic found deleted before they were read.
    func recordDeletedUnread(_ count: Int) {
        state.withLock { $0.recordsDeletedUnread += count }
    }

    /// Counts an acknowledged outcome record: its event's kind, cause and reason code (an acknowledgement handler keeps
    /// only these of the event while its record is in flight), the first record of each kind as a sample, and its
    /// latency from `sourceTimestamp`, its event's record timestamp.
    func recordOutcome(
        kind: AnalyticsEvent.Kind,
        cause: AnalyticsEvent.ExpiryCause?,
        reasonCode: String? = nil,
        bytes: [UInt8],
        isTimerExpiry: Bool,
        sourceTimestamp: Date? = nil
    ) {
        let now = Date()
        state.withLock { state in
            state.lastOutcomeAt = now
            if recordsLatency, let sourceTimestamp {
                state.latenciesMilliseconds.append(now.timeIntervalSince(sourceTimestamp) * 1000)
            }
            if isTimerExpiry {
                state.timersFired += 1
                return
            }
            if let sourceTimestamp { state.outcomeLatency.record(seconds: now.timeIntervalSince(sourceTimestamp)) }
            state.outcomes[kind, default: 0] += 1
            if let cause { state.expiredByCause[cause, default: 0] += 1 }
            if let reasonCode { state.outcomeReasons[kind, default: [:]][reasonCode, default: 0] += 1 }
            if state.sampleAnalytics[kind] == nil { state.sampleAnalytics[kind] = bytes }
        }
    }
}
