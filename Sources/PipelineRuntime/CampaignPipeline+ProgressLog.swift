import KafkaClient
import Logging
import Synchronization

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
        /// Events of the assigned partitions not finished, read or not (`nil`: not measured).
        var lag: Int?

        /// All terminal outcomes.
        var finished: Int { outcomes.values.reduce(0, +) }
    }

    /// Logs a "Progress" line every `interval` while the run has work: events read and outcomes written, with their
    /// rates since the line before, what is in flight, and the partitions assigned and paused. Work in flight is
    /// logged every interval, moving or not (events that do not finish show as rates of 0). An interval in which
    /// nothing changed, with nothing in flight, logs nothing, so an idle instance does not fill its log; the line after
    /// the last change shows the final counts, with nothing in flight once the last events finished (an event can
    /// leave the count in flight after its outcome was counted: a timer's record, a partition taken away).
    /// Each interval also measures the consumer's lag (``measureLag(of:)``), for the line and ``Status/consumerLag``.
    /// Runs until cancelled.
    ///
    /// A measurement that failed is not tried again for a while, twice as long after each failure in a row, up to
    /// ``lagBackoffLimit``: with the brokers gone, librdkafka 2.0.2's look-up of a partition's end goes on past its
    /// timeout (minutes), each on a thread of its own.
    func logProgress(every interval: Duration, consumer: KafkaConsumer) async {
        var last = ProgressCounts()
        var lastAt = ContinuousClock.now
        var failures = 0
        var nextMeasurement = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            var lag: Int?
            if ContinuousClock.now >= nextMeasurement {
                lag = await measureLag(of: consumer)
                // A stopping consumer's assignment is emptied as it closes: what it measured then is not the lag.
                if Task.isCancelled || isStopping { return }
                failures = lag == nil ? failures + 1 : 0
                nextMeasurement = ContinuousClock.now + Self.lagBackoff(afterFailures: failures, interval: interval)
            }
            measuredLag.withLock { $0 = lag }
            let (events, outcomes, timerExpiries) = statistics.progressCounts
            let status = self.status
            let counts = ProgressCounts(events: events, outcomes: outcomes, timerExpiries: timerExpiries, inFlight: status.inFlightEvents, lag: lag)
            guard Self.logsProgress(counts, since: last) else { continue }
            let now = ContinuousClock.now
            logger.info("Progress", metadata: Self.progressMetadata(counts, since: last, over: now - lastAt, status: status))
            last = counts
            lastAt = now
        }
    }

    /// Whether a "Progress" line is due for `counts`, the last line having shown `last`: when anything changed (the
    /// count in flight and the lag too: they can fall to 0 after the outcomes stopped moving), or work is in flight.
    /// (Not for a lag that stays put: a partition that ends in a transaction marker keeps one for good.)
    static func logsProgress(_ counts: ProgressCounts, since last: ProgressCounts) -> Bool {
        counts != last || counts.inFlight > 0
    }

    /// Events of the sends topic's partitions this instance reads that are not finished: for each, its high watermark
    /// less where its unfinished events begin (its first event in flight; else the position after the last read; else
    /// the group's commit, or the partition's start or end as `auto.offset.reset` says), summed. The high watermark
    /// is asked of each partition's leader (a paused partition is not fetched, so the one its fetches last saw would
    /// stay behind). Counted as `kafka-consumer-groups` counts lag: a transaction marker at a partition's end, which no
    /// consumer is given, counts one, and records deleted by compaction count too. `nil` when a look-up failed
    /// (logged at debug).
    func measureLag(of consumer: KafkaConsumer) async -> Int? {
        let partitions = consumer.assignment.filter { $0.topic == configuration.topics.sends }.sorted { $0.partition < $1.partition }
        var begins = readPositions.withLock { $0 }
        // Read under the lock, no tracker kept: a tracker holds the run (its completion), and this frame lives across
        // the look-ups below, which a stopping run waits for.
        progress.withLock { trackers in
            for partition in partitions {
                if let tracker = trackers[partition], consumer.isReading(partition, generation: tracker.generation), let first = tracker.firstUnfinished {
                    begins[partition] = first
                }
            }
        }
        do {
            let positions = try await sendsPositions(of: partitions, known: begins, consumer: consumer, timeout: Self.lagLookupLimit)
            var lag: Int64 = 0
            for partition in partitions {
                // No more look-ups on a consumer that is being closed.
                if isStopping { return nil }
                let marks = try await consumer.watermarks(topic: partition.topic, partition: partition.partition, timeout: Self.lagLookupLimit)
                lag += max(0, marks.high - max(positions.position(of: partition, marks: marks), marks.low))
            }
            return Int(lag)
        } catch {
            logger.debug("Consumer lag not measured", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The longest each of ``measureLag(of:)``'s look-ups waits.
    static let lagLookupLimit: Duration = .seconds(5)

    /// The longest ``logProgress(every:consumer:)`` waits before it measures the lag again after failures.
    static let lagBackoffLimit: Duration = .seconds(300)

    /// How long after a measurement of the lag the next is made, `failures` having failed in a row (0: at the next
    /// interval).
    static func lagBackoff(afterFailures failures: Int, interval: Duration) -> Duration {
        failures == 0 ? .zero : min(interval * (1 << min(failures, 16)), lagBackoffLimit)
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
            "lag": "\(counts.lag.map(String.init) ?? "unknown")",
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
