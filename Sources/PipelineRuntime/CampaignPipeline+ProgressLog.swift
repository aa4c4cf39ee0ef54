import Logging

extension CampaignPipeline {
    /// What a "Progress" line reports of the run so far, and what the next line is compared with.
    struct ProgressCounts: Sendable, Equatable {
        /// Events read.
        var events = 0
        /// Terminal outcomes written (acknowledged by Kafka), by kind.
        var outcomes: [AnalyticsEvent.Kind: Int] = [:]
        /// `push.expired` records of timers whose countdown ended (on top of the outcomes).
        var timerExpiries = 0
        /// Events read and not finished.
        var inFlight = 0

        /// All terminal outcomes.
        var finished: Int { outcomes.values.reduce(0, +) }
    }

    /// Logs a "Progress" line every `interval` while the run has work: events read and outcomes written, with their
    /// rates since the line before, what is in flight, and the partitions assigned and paused. Work in flight is
    /// logged every interval, moving or not (events that do not finish show as rates of 0). An interval in which
    /// nothing changed, with nothing in flight, logs nothing, so an idle instance does not fill its log; the line after
    /// the last change shows the final counts, with nothing in flight once the last events finished (an event can
    /// leave the count in flight after its outcome was counted: a timer's record, a partition taken away).
    /// Runs until cancelled.
    func logProgress(every interval: Duration) async {
        var last = ProgressCounts()
        var lastAt = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            let (events, outcomes, timerExpiries) = statistics.progressCounts
            let status = self.status
            let counts = ProgressCounts(events: events, outcomes: outcomes, timerExpiries: timerExpiries, inFlight: status.inFlightEvents)
            guard Self.logsProgress(counts, since: last) else { continue }
            let now = ContinuousClock.now
            logger.info("Progress", metadata: Self.progressMetadata(counts, since: last, over: now - lastAt, status: status))
            last = counts
            lastAt = now
        }
    }

    /// Whether a "Progress" line is due for `counts`, the last line having shown `last`: when anything changed (the
    /// count in flight too: it can fall to 0 after the outcomes stopped moving), or work is in flight.
    static func logsProgress(_ counts: ProgressCounts, since last: ProgressCounts) -> Bool {
        counts != last || counts.inFlight > 0
    }

    /// The metadata of a "Progress" line: the outcomes named as the "Pipeline stopped" line names them
    /// (``outcomeMetadata(_:timerExpiries:)``).
    static func progressMetadata(_ counts: ProgressCounts, since last: ProgressCounts, over elapsed: Duration, status: Status) -> Logger.Metadata {
        let seconds = max(elapsed.inSeconds, 0.001)
        func rate(_ count: Int) -> Logger.MetadataValue { "\(Int((Double(count) / seconds).rounded()))" }
        return outcomeMetadata(counts.outcomes, timerExpiries: counts.timerExpiries).merging([
            "events": "\(counts.events)",
            "eventsPerSecond": rate(counts.events - last.events),
            "finished": "\(counts.finished)",
            "finishedPerSecond": rate(counts.finished - last.finished),
            "inFlight": "\(counts.inFlight)",
            "assignedPartitions": "\(status.assignedPartitions)",
            "pausedPartitions": "\(status.pausedPartitions)",
            "pendingTimers": "\(status.pendingTimers)",
        ]) { $1 }
    }

    /// Each outcome's count under its name (`delivered`, …, every kind, 0 when none) and `timerExpiries`: the metadata
    /// the "Progress" and "Pipeline stopped" lines share.
    static func outcomeMetadata(_ outcomes: [AnalyticsEvent.Kind: Int], timerExpiries: Int) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["timerExpiries": "\(timerExpiries)"]
        for kind in AnalyticsEvent.Kind.allCases { metadata[String(kind.name)] = "\(outcomes[kind] ?? 0)" }
        return metadata
    }
}
