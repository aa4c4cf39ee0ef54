import Foundation
import KafkaClient
import Logging
import PushSinks
import Synchronization

/// Sends output records and keeps sending each one until the cluster acknowledges it: a failed output is retried
/// with exponential backoff, forever, and is never skipped. Because the source offset of an event is committed
/// only after all its outputs are acknowledged, an output that keeps failing holds its partition's commit back
/// instead of being lost.
final class OutputSender: Sendable {
    /// One record and what to do once it is acknowledged.
    struct Output: Sendable {
        var record: KafkaProducerRecord
        var attempt = 0
        var acknowledgement: Acknowledgement

        init(record: KafkaProducerRecord, acknowledgement: Acknowledgement) {
            self.record = record
            self.acknowledgement = acknowledgement
        }

        /// An output whose acknowledgement calls `onAcknowledged`.
        init(record: KafkaProducerRecord, onAcknowledged: @escaping @Sendable (KafkaDeliveryReport) -> Void) {
            self.init(record: record, acknowledgement: .call(onAcknowledged))
        }
    }

    /// What an acknowledged output does. The cases the pipeline sends for every event carry their few values, not a
    /// closure: no context is allocated per record, and nothing run-wide is captured by it.
    enum Acknowledgement: Sendable {
        /// One unit of the event is done.
        case eventUnit(EventTicket)
        /// The event's outcome record is written: counted in the statistics (with the record's bytes as the sample of
        /// its kind), then one unit of the event is done. One the cluster refuses for good is written again with its
        /// long texts cut, and given up (logged as an error) only if that is refused too, not retried for ever.
        case outcome(CountedOutcome, EventTicket)
        /// A sink's payload record: acknowledged means delivered. A record the cluster refuses for good (see
        /// ``OutputSender/isPermanent(_:)``) is failed, not retried.
        case payload(@Sendable (SinkOutcome) -> Void)
        /// A dead letter: one unit of the event is done. One the cluster refuses for its size (the original record
        /// plus the error headers can pass a limit the original did not) is written again smaller, as
        /// `deadLetterRefused` says; the original stays at its `source.*` position.
        case deadLetter(EventTicket)
        /// A delivered timer notification's timer record (sent once its `push.delivered` is acknowledged): its timer is
        /// scheduled, then one unit of the event is done.
        case timerRecord(TimerArming, EventTicket)
        /// Anything else; retried until acknowledged, like every output.
        case call(@Sendable (KafkaDeliveryReport) -> Void)
    }

    /// What the statistics count of an outcome record.
    struct CountedOutcome: Sendable {
        var kind: AnalyticsEvent.Kind
        var cause: AnalyticsEvent.ExpiryCause?
        /// The reason code of a failed or rejected message (`invalid_token`, `missing_field`, …).
        var reasonCode: String? = nil
        /// The record's value: the first of each kind is kept as a sample.
        var bytes: [UInt8]
        /// The source record's timestamp, for the latency statistics.
        var sourceTimestamp: Date?
        /// For a delivered timer notification's `push.delivered`: its timer record is sent once this is acknowledged.
        var arming: TimerArming? = nil
        /// Written again with its long texts cut, after the cluster refused it for its size.
        var isCut = false
    }

    /// Errors no retry can get past: the record itself is refused (too large, invalid).
    static func isPermanent(_ error: KafkaError) -> Bool {
        switch error.librdkafkaName {
        case "MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "INVALID_RECORD", "RECORD_LIST_TOO_LARGE", "INVALID_MSG_SIZE":
            true
        default:
            false
        }
    }

    private struct Retry {
        var due: ContinuousClock.Instant
        var output: Output
        /// Waiting for room in the producer's queue (`_QUEUE_FULL`), not for a backoff after an error.
        var isQueueFull = false
    }

    private struct State {
        var retries: [Retry] = []
        /// How many of ``retries`` wait for room in the producer's queue.
        var queueFullRetries = 0
        var failuresSinceReport = 0
        var lastFailure: KafkaError?
    }

    private let producer: KafkaProducer
    private let statistics: PipelineStatistics
    private let state = Mutex(State())
    private let backoff: Duration
    private let maxBackoff: Duration
    private let logger: Logger
    private let onFatalError: @Sendable (KafkaError) -> Void
    /// A payload the cluster refuses for good can come once per event.
    let refusedOutputWarning = RepeatedWarning("Output refused for good")

    /// - Parameter onFatalError: told, for every output it fails, once the producer has failed for good
    ///   (``KafkaError/Code/fatal``, an idempotent producer's broken sequence): no retry on this producer can succeed,
    ///   so the outputs are still kept for retrying (nothing is acknowledged that was not written), and the caller
    ///   stops.
    init(
        producer: KafkaProducer,
        statistics: PipelineStatistics,
        backoff: Duration,
        maxBackoff: Duration,
        logger: Logger,
        onFatalError: @escaping @Sendable (KafkaError) -> Void = { _ in }
    ) {
        self.producer = producer
        self.statistics = statistics
        self.backoff = backoff
        self.maxBackoff = maxBackoff
        self.logger = logger
        self.onFatalError = onFatalError
    }

    /// Outputs waiting for another attempt.
    var pendingRetries: Int { state.withLock { $0.retries.count } }

    /// The attempts that failed so far of each output waiting for another, in line order (an output waiting only for
    /// room in the producer's queue has none more than when it was sent).
    var pendingRetryAttempts: [Int] { state.withLock { $0.retries.map(\.output.attempt) } }

    /// Records queued in the producer and not acknowledged yet.
    var unacknowledgedRecords: Int { producer.pendingCount }

    /// Queues an output, waiting (asynchronously) while librdkafka's local queue is full. For the processing loop,
    /// where waiting is the backpressure.
    ///
    /// Once cancelled (the run is stopping), an output that finds the queue full waits with the retries instead, and
    /// so does every output sent after it while one waits: going first would put it ahead of an earlier output of its
    /// key (found by review).
    func send(_ output: Output) async {
        if Task.isCancelled, state.withLock({ $0.queueFullRetries > 0 }) {
            waitForQueueRoom([output])
            return
        }
        while true {
            do throws(KafkaError) {
                try enqueue(output)
                return
            } catch where error.librdkafkaName == "_QUEUE_FULL" {
                try? await Task.sleep(for: .milliseconds(1))
                if Task.isCancelled {
                    scheduleRetry(output, after: error)
                    return
                }
            } catch {
                scheduleRetry(output, after: error)
                return
            }
        }
    }

    /// Queues an output without ever waiting; a full queue or any failure becomes a retry. For delivery
    /// callbacks, which run on the producer's thread and must not block it.
    func sendNow(_ output: Output) {
        do throws(KafkaError) {
            try enqueue(output)
        } catch {
            scheduleRetry(output, after: error)
        }
    }

    private func enqueue(_ output: Output) throws(KafkaError) {
        try producer.produce(output.record, reportingTo: InFlight(output.acknowledgement, attempt: output.attempt, sender: self))
    }

    /// An output while its record is in flight: the producer holds it and hands it the record's report (one object
    /// per record, where a closure took its context and a box for it). It does not keep the record: librdkafka
    /// hands a failed one back, and the one sent is let go where it was made.
    private final class InFlight: KafkaDeliveryReceiver, @unchecked Sendable {
        // Immutable after init: safe to send.
        let acknowledgement: Acknowledgement
        let attempt: Int
        let sender: OutputSender

        init(_ acknowledgement: Acknowledgement, attempt: Int, sender: OutputSender) {
            self.acknowledgement = acknowledgement
            self.attempt = attempt
            self.sender = sender
        }

        override func deliveryReported(_ result: Result<KafkaDeliveryReport, KafkaError>) {
            switch result {
            case .success(let report):
                sender.acknowledged(acknowledgement, report: report)
            case .failure:
                // The producer reports failures with their record, to `deliveryFailed`.
                preconditionFailure("a failed output reported without its record")
            }
        }

        override func deliveryFailed(_ error: KafkaError, record: KafkaProducerRecord) {
            var output = Output(record: record, acknowledgement: acknowledgement)
            output.attempt = attempt
            sender.scheduleRetry(output, after: error)
        }
    }

    private func acknowledged(_ acknowledgement: Acknowledgement, report: KafkaDeliveryReport) {
        switch acknowledgement {
        case .eventUnit(let ticket), .deadLetter(let ticket):
            ticket.finishUnit()
        case .outcome(let outcome, let ticket):
            statistics.recordOutcome(
                kind: outcome.kind,
                cause: outcome.cause,
                reasonCode: outcome.reasonCode,
                bytes: outcome.bytes,
                isTimerExpiry: false,
                sourceTimestamp: outcome.sourceTimestamp
            )
            // Before this record's unit is done: the event stays unfinished until its timer record is written too.
            if let timerRecord = outcome.arming?.deliveredAcknowledged() { sendNow(timerRecord) }
            ticket.finishUnit()
        case .timerRecord(let arming, let ticket):
            arming.recordAcknowledged()
            ticket.finishUnit()
        case .payload(let completion):
            completion(.delivered(attempts: 1))
        case .call(let onAcknowledged):
            onAcknowledged(report)
        }
    }

    private func scheduleRetry(_ output: Output, after error: KafkaError) {
        if error.code == .fatal { onFatalError(error) }
        if error.code == .closed {
            // The producer closed (the run is ending) before the record was acknowledged, or refuses records since
            // it closed: no retry can send it, and it is not counted as one. Its event stays uncommitted, and the
            // next run processes it again (the producer's close said how many records it dropped).
            return
        }
        if case .deadLetter(let ticket) = output.acknowledgement, Self.isPermanent(error) {
            deadLetterRefused(output, ticket: ticket, error: error)
            return
        }
        if case .outcome(var outcome, let ticket) = output.acknowledgement, Self.isPermanent(error) {
            // Bounded in size (ids, a cut detail), so only an event with ids of hundreds of kilobytes gets here:
            // retried for good, it would hold its partition's commit back for ever (and each restart would send the
            // partition's later events to phones again). A delivered timer's, whose timer record waits for it: the
            // timer is given up (its record and its expiry carry the same ids; found by review: its unit was left
            // open, and the event with its partition's commit held back for good).
            outcome.arming?.deliveredGivenUp()
            outcome.arming = nil
            // Written again with its long texts cut, so that the event still has its outcome (found by review: it
            // was given up, and the event committed without one).
            if !outcome.isCut, let value = output.record.value, let cut = AnalyticsEvent.withLongTextsCut(value) {
                refusedOutputWarning.log(
                    to: logger,
                    metadata: [
                        "topic": "\(output.record.topic)",
                        "error": "\(error)",
                        "written": "with its texts cut at \(AnalyticsEvent.detailLimit) bytes",
                    ]
                )
                outcome.isCut = true
                outcome.bytes = cut
                var trimmed = output
                trimmed.record.value = cut
                trimmed.acknowledgement = .outcome(outcome, ticket)
                sendNow(trimmed)
                return
            }
            logger.error(
                "Outcome record refused for good, also with its texts cut; given up (its event has no analytics record)",
                metadata: ["topic": "\(output.record.topic)", "bytes": "\(output.record.value?.count ?? 0)", "error": "\(error)"]
            )
            ticket.finishUnit()
            return
        }
        if case .payload(let completion) = output.acknowledgement, Self.isPermanent(error) {
            let topic = output.record.topic
            refusedOutputWarning.log(to: logger, metadata: ["topic": "\(topic)", "error": "\(error)"])
            let code: SinkFailure.Code = (error.librdkafkaName ?? "").contains("SIZE_TOO_LARGE") ? .payloadTooLarge : .rejectedByPlatform
            completion(.failed(SinkFailure(code, "\(topic) refused the payload: \(error)")))
            return
        }
        if error.librdkafkaName == "_QUEUE_FULL" {
            // No attempt failed: it waits for room, behind the others that do.
            waitForQueueRoom([output])
            return
        }
        var next = output
        next.attempt += 1
        // Once per output, however many of its attempts fail (`outputs_retried_total` counts outputs; found by review).
        if next.attempt == 1 { statistics.recordRetry() }
        let retry = Retry(due: .now + backoffDelay(attempt: next.attempt), output: next)
        state.withLock { state in
            state.retries.append(retry)
            state.failuresSinceReport += 1
            state.lastFailure = error
        }
    }

    /// A dead letter refused for good: written again without the original value, then with only the error and
    /// source headers (the original's own headers can be what is too large), and given up (logged as an error) if
    /// even that is refused, so its event and partition do not wait for good.
    private func deadLetterRefused(_ output: Output, ticket: EventTicket, error: KafkaError) {
        var trimmed = output
        let topic = output.record.topic
        if let value = output.record.value {
            refusedOutputWarning.log(to: logger, metadata: ["topic": "\(topic)", "error": "\(error)", "written": "without the original value"])
            trimmed.record.value = nil
            trimmed.record.headers.append(KafkaHeader(key: "error.value.dropped", string: "\(value.count) bytes, refused: \(error)"))
            sendNow(trimmed)
        } else if output.record.headers.contains(where: { !Self.deadLetterHeaderNames.contains($0.key) }) {
            refusedOutputWarning.log(to: logger, metadata: ["topic": "\(topic)", "error": "\(error)", "written": "with its error and source headers only"])
            trimmed.record.headers.removeAll { !Self.deadLetterHeaderNames.contains($0.key) }
            sendNow(trimmed)
        } else {
            logger.error(
                "Dead letter refused even without the original record; given up (the source record stays at its source position)",
                metadata: ["topic": "\(topic)", "error": "\(error)", "headers": "\(output.record.headers.map(\.key).joined(separator: ", "))"]
            )
            ticket.finishUnit()
        }
    }

    /// The names of the headers the pipeline adds to a dead letter; the original's headers of these names are
    /// dropped.
    static let deadLetterHeaderNames: Set<String> = [
        "messageId", "error.code", "error.detail", "error.value.dropped", "source.topic", "source.partition", "source.offset",
    ]

    private func backoffDelay(attempt: Int) -> Duration {
        var delay = backoff
        for _ in 1..<min(attempt, 20) where delay < maxBackoff { delay *= 2 }
        let capped = min(delay, maxBackoff)
        // Up to 20 % jitter, so many failed outputs do not retry in lockstep.
        return capped + capped * Double.random(in: 0..<0.2)
    }

    /// Puts `outputs` with the retries that wait for room in the producer's queue, in order: after those waiting
    /// already, or before every retry (`first`: they were taken from the front).
    private func waitForQueueRoom(_ outputs: [Output], first: Bool = false) {
        let due = ContinuousClock.now + .milliseconds(10)
        let waiting = outputs.map { Retry(due: due, output: $0, isQueueFull: true) }
        state.withLock { state in
            if first {
                state.retries.insert(contentsOf: waiting, at: 0)
            } else {
                state.retries.append(contentsOf: waiting)
            }
            state.queueFullRetries += waiting.count
        }
    }

    /// Sends due retries until cancelled, and reports failures at most once a second.
    func runRetries() async {
        var lastReport = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
            let now = ContinuousClock.now
            // Those waiting for queue room stay counted until each is queued or back in line: meanwhile an output
            // sent while stopping waits behind them rather than going first.
            let (due, queueFull): ([Output], Int) = state.withLock { state in
                guard !state.retries.isEmpty else { return ([], 0) }
                let ready = state.retries.filter { $0.due <= now }
                if !ready.isEmpty { state.retries.removeAll { $0.due <= now } }
                return (ready.map(\.output), ready.count { $0.isQueueFull })
            }
            for (index, output) in due.enumerated() {
                do throws(KafkaError) {
                    try enqueue(output)
                } catch where error.librdkafkaName == "_QUEUE_FULL" {
                    // The first to find the queue full waits with every one after it, in order: none overtakes it.
                    waitForQueueRoom(Array(due[index...]), first: true)
                    break
                } catch {
                    scheduleRetry(output, after: error)
                }
            }
            if queueFull > 0 { state.withLock { $0.queueFullRetries -= queueFull } }
            if now - lastReport >= .seconds(1) {
                lastReport = now
                let (failures, last, waiting) = state.withLock { state in
                    defer {
                        state.failuresSinceReport = 0
                        state.lastFailure = nil
                    }
                    return (state.failuresSinceReport, state.lastFailure, state.retries.count)
                }
                if failures > 0, let last {
                    logger.error(
                        "Outputs failed and will be retried; their source offsets are not committed until they succeed",
                        metadata: [
                            "failures": "\(failures)",
                            "retrying": "\(waiting)",
                            "error": "\(last)",
                            "kafka.topic": "\(last.topic ?? "")",
                        ]
                    )
                }
            }
        }
    }
}
