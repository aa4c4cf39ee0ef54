import Logging

extension CampaignPipeline {
    /// What a "Progress" log line reports: the counts since the run started, and how they moved since the line before.
    struct ProgressCounts: Sendable, Equatable {
        /// Events read.
        var read = 0
        /// Terminal outcomes written (acknowledged by Kafka).
        var finished = 0

        init(read: Int = 0, finished: Int = 0) {
            self.read = read
            self.finished = finished
        }

        init(_ summary: PipelineStatistics.Snapshot) {
            self.init(read: summary.totalIn, finished: summary.outcomes.values.reduce(0, +))
        }
    }

    /// Logs a "Progress" line every `interval` while the run has work: events read, outcomes written and their rates
    /// over the interval, what is in flight, and the partitions assigned and paused. An interval in which nothing was
    /// read or finished, with nothing in flight, logs nothing, so an idle instance does not fill its log; the line
    /// after the last movement still shows the final counts. Runs until cancelled.
    func logProgress(every interval: Duration) async {
        var last = ProgressCounts()
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            let summary = statistics.snapshot
            let counts = ProgressCounts(summary)
            let status = self.status
            guard counts != last || status.inFlightEvents > 0 else { continue }
            logger.info("Progress", metadata: Self.progressMetadata(counts, since: last, over: interval, summary: summary, status: status))
            last = counts
        }
    }

    /// The metadata of a "Progress" line.
    static func progressMetadata(
        _ counts: ProgressCounts,
        since last: ProgressCounts,
        over interval: Duration,
        summary: PipelineStatistics.Snapshot,
        status: Status
    ) -> Logger.Metadata {
        let seconds = max(interval.inSeconds, 0.001)
        func rate(_ count: Int) -> Logger.MetadataValue { "\(Int((Double(count) / seconds).rounded()))" }
        return [
            "read": "\(counts.read)",
            "readPerSecond": rate(counts.read - last.read),
            "finished": "\(counts.finished)",
            "finishedPerSecond": rate(counts.finished - last.finished),
            "inFlight": "\(status.inFlightEvents)",
            "delivered": "\(summary.outcomes[.delivered] ?? 0)",
            "failed": "\(summary.outcomes[.failed] ?? 0)",
            "rejected": "\(summary.outcomes[.rejected] ?? 0)",
            "expired": "\(summary.outcomes[.expired] ?? 0)",
            "suppressed": "\(summary.outcomes[.suppressed] ?? 0)",
            "assignedPartitions": "\(status.assignedPartitions)",
            "pausedPartitions": "\(status.pausedPartitions)",
            "pendingTimers": "\(status.pendingTimers)",
        ]
    }
}
