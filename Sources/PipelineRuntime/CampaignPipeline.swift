import Foundation
public import KafkaClient
public import Logging
public import PipelineCore
import PlatformSinks
public import PushSinks
public import ServiceLifecycle
import Synchronization

/// The streaming pipeline: reads `push.requested` events in a consumer group, renders each through the template
/// registry, writes payloads and analytics to Kafka, and commits a source offset only after every output derived
/// from it, and from every earlier offset of its partition, is acknowledged.
///
/// Run it as a `Service` in a `ServiceGroup` (graceful shutdown on SIGTERM/SIGINT: stop fetching, drain in-flight
/// outputs, commit, close), or call ``run()`` directly.
public final class CampaignPipeline: Service {
    /// How the pipeline judges time-dependent decisions (TTL expiry, cancellations, timers).
    public enum DecisionClock: Sendable {
        /// The wall clock: streaming.
        case wallClock
        /// Each event's own `occurredAt`: replays give the same outcomes whenever they run.
        case eventTime
    }

    let configuration: PipelineConfiguration
    let processor: EventProcessor
    let logger: Logger
    let decisionClock: DecisionClock
    /// The ranges to reprocess, for a replay; `nil` streams from the consumer group's positions.
    let replay: ReplayPlan?
    /// Receives a replay's progress about once a second.
    let progressHandler: (@Sendable (ReplayProgress) -> Void)?
    /// What the pipeline did so far.
    public let statistics: PipelineStatistics

    let campaigns = Mutex(CampaignTable())
    let timers = TimerBook()
    /// Which partitions' timers fire here, and the expiries in flight (streaming only).
    let timerFiring = TimerFiring()
    /// The instants sends were judged at, kept on the timers topic (streaming only: ``keepsDecisionTimes``).
    let decisionTimes = DecisionTimes()
    /// Per partition of the sends topic, the assignment generation whose reading has caught up with the partition's
    /// decision times on the timers topic.
    let decisionTimesRead = Mutex([KafkaTopicPartition: Int]())
    /// Decision times records not written within ``decisionTimesWait`` (a state topic partition without a leader);
    /// the outputs go ahead without them.
    let unwrittenDecisionTimesWarning = RepeatedWarning("Decision times not yet written; outputs go ahead")
    /// Sends read again whose first judging's campaign table had read more of the definitions topic than this one can.
    let tableBehindWarning = RepeatedWarning(
        "The campaign table has not read the definitions topic as far as a send's first judging had; it is judged again with less"
    )
    /// The `writer` header of the timer records this pipeline writes: they are in ``timers`` already, so reading
    /// them back (the state consumer reads the whole timers topic) skips them.
    /// (Bytes, not text: the header is compared with each record's, whose values are bytes.)
    let timerRecordHeaders = [KafkaHeader(key: "writer", value: Array(UUID().uuidString.utf8))]
    let progress = Mutex([KafkaTopicPartition: PartitionProgress]())
    /// The sends topic's events not finished, as last measured (``Status/consumerLag``).
    let measuredLag = Mutex<Int?>(nil)
    /// The position after the last event read, per partition (for idle detection).
    let readPositions = Mutex([KafkaTopicPartition: Int64]())
    /// Trackers whose commit position advanced since it was last stored (each once, however many events advanced
    /// it: ``PartitionProgress/markPositionToStore()``).
    let completedTrackers = Mutex([ObjectIdentifier: PartitionProgress]())
    /// Sinks handed over in code (custom sinks, or HTTP sinks built by the caller), used for their ``PushSink/kind``.
    let providedSinks: [any PushSink]
    /// The sinks of each platform while running.
    let activeRoutes = Mutex(ActiveRoutes([:]))
    /// Names of the sinks that are throttled now; partitions with deliveries waiting on them are paused.
    let throttledSinks = Mutex(Set<String>())
    /// Whether ``throttledSinks`` is not empty, read without its lock for every event.
    let hasThrottledSinks = Atomic<Bool>(false)
    /// The first sink that stopped (refused credentials), which stops the pipeline.
    let sinkStop = Mutex<(sink: String, failure: SinkFailure)?>(nil)
    /// The error a producer failed with for good, which stops the pipeline.
    let producerFailure = Mutex<KafkaError?>(nil)
    /// The consumer group's refusal of this instance, once it lasted ``PipelineConfiguration/groupRefusalTimeout``,
    /// which stops the pipeline.
    let groupRefusal = Mutex<KafkaError?>(nil)
    /// The group's refusal not yet outlasted (`pending`, cleared by an assignment), and how many refusals began
    /// (`serial`: which one a waiting ``stopIfStillRefused(_:)`` is for).
    let groupRefusalWait = Mutex<(pending: KafkaError?, serial: Int)>((nil, 0))
    /// The producers of the current run (for tests that make one fail).
    let runProducers = Mutex<[KafkaProducer]>([])
    /// Warnings that can come once per record, each logged in full at most ten times in ten seconds.
    let rejectedEventWarning = RepeatedWarning("Event rejected")
    let ignoredCampaignEventWarning = RepeatedWarning("Campaign event ignored")
    let unreadableTimerWarning = RepeatedWarning("Unreadable timer record ignored")
    /// Events rendered with warnings (sent all the same): counted by template in the statistics and `/metrics`.
    let warnedEventWarning = RepeatedWarning("Event rendered with warnings")
    /// Sends whose record key is not their recipient's id: the contract's per-recipient order holds only per key.
    let sendKeyWarning = RepeatedWarning("Send not keyed by its recipient id; one recipient's sends under different keys may leave out of order")
    /// The pipeline's own repeated warnings, whose counts still held back are said when it stops (found by review:
    /// the decision times' was left out, and none was said when the start-up ended after the state was folded).
    var repeatedWarnings: [RepeatedWarning] {
        [
            rejectedEventWarning, warnedEventWarning, ignoredCampaignEventWarning, unreadableTimerWarning, sendKeyWarning, tableBehindWarning,
            unwrittenDecisionTimesWarning,
        ]
    }
    private let stopSignal = StopSignal()
    /// What ``status`` reports that the run sets as it goes.
    let runState = Mutex(RunState())
    /// Whether the replay reached the end of every range with nothing in flight (``hasFinishedReplay``).
    let replayFinished = Atomic<Bool>(false)
    /// Why the run's last commit failed, if it did (``finalCommitFailure``).
    let lastCommitFailure = Mutex<(any Error)?>(nil)
    /// Records of the replay's ranges its group had committed when it started (``ReplayProgress/doneBeforeStart``).
    let replayDoneBeforeStart = Atomic<Int64>(0)
    /// A replay's progress per partition: the highest position done (``store(_:consumer:)``), and the last committed
    /// (``commitReplayProgress(_:consumer:)``).
    let replayCommits = Mutex(ReplayCommits())
    /// The offsets the reading of the sends topic jumped over, and those found deleted before they were read.
    let offsetGaps = Mutex(OffsetGaps())

    /// Creates a pipeline.
    ///
    /// - Parameters:
    ///   - configuration: brokers, topics, group and limits.
    ///   - registry: the template plugins.
    ///   - decisionClock: wall clock for streaming (the default), event time for replays.
    ///   - statistics: where to count what happens (pass one that records latency to benchmark).
    ///   - sinks: sinks to use instead of building them from the configuration, matched to the routes by their
    ///     ``PushSink/kind`` (your own sinks, or HTTP sinks built with settings of your own). `kafka` is built in.
    ///   - logger: the root logger; lifecycle steps are logged at `info`, per-event problems at `warning` (each kind
    ///     at most ten times in ten seconds, the others at `debug`).
    public init(
        configuration: PipelineConfiguration,
        registry: TemplateRegistry,
        decisionClock: DecisionClock = .wallClock,
        statistics: PipelineStatistics = PipelineStatistics(),
        sinks: [any PushSink] = [],
        logger: Logger
    ) {
        self.providedSinks = sinks
        self.statistics = statistics
        self.configuration = configuration
        self.processor = EventProcessor(registry: registry)
        self.decisionClock = decisionClock
        self.replay = nil
        self.progressHandler = nil
        self.logger = logger
    }

    /// Creates a pipeline that replays ranges of the sends topic: it reads them in its own consumer group
    /// (``PipelineConfiguration/groupID``; offsets the group committed before are resumed from), judges expiry
    /// and cancellations by each event's own time, schedules no timers, and stops when every range is done.
    ///
    /// The group does not stop a second replay in it (a replay reads its partitions itself, outside the group's
    /// membership): hold the group's ``ReplayLease`` while it runs, as `campaign-pipeline replay` does.
    ///
    /// - Parameters:
    ///   - configuration: brokers, topics (point the outputs elsewhere to keep a replay off the live sinks) and
    ///     the replay's group.
    ///   - registry: the template plugins.
    ///   - replay: the ranges to reprocess.
    ///   - progress: receives the progress about once a second.
    ///   - sinks: sinks to use instead of building them from the configuration (see the streaming initializer).
    ///   - decisionClock: ``DecisionClock/eventTime`` (the default) gives the same outcomes whenever the replay runs;
    ///     a replay that sends to devices judges at the ``DecisionClock/wallClock``, as a live run does, so that
    ///     nothing expired or cancelled by now reaches a phone.
    ///   - logger: the root logger.
    public init(
        configuration: PipelineConfiguration,
        registry: TemplateRegistry,
        replay: ReplayPlan,
        progress: (@Sendable (ReplayProgress) -> Void)? = nil,
        sinks: [any PushSink] = [],
        decisionClock: DecisionClock = .eventTime,
        logger: Logger
    ) {
        self.providedSinks = sinks
        self.statistics = PipelineStatistics()
        self.configuration = configuration
        self.processor = EventProcessor(registry: registry)
        self.decisionClock = decisionClock
        self.replay = replay
        self.progressHandler = progress
        self.logger = logger
    }

    /// Whether this pipeline, a replay, read every partition's range to its end and finished every event of it
    /// before it stopped: `false` while it runs, for a replay stopped before (``stop()``, SIGINT, SIGTERM: resume it
    /// with the same group), and for a streaming pipeline.
    public var hasFinishedReplay: Bool { replayFinished.load(ordering: .acquiring) }

    /// The offsets of the sends topic, per partition, whose records the topic deleted before this pipeline read them
    /// (retention, while it lagged or was stopped, or reached a replay's range while it ran; a deletion of records):
    /// they get no outcome (a replay's count as done in its progress). Each jump of the reading over offsets, and each
    /// new reading starting from a committed offset, is checked against the partition's first offset still stored; an
    /// offset below it that held a transaction marker is counted too, so these are "up to" that many records. A replay
    /// finishes (``hasFinishedReplay``) only once every jump is checked; a streaming pipeline checks them every few
    /// seconds and when it stops.
    public var offsetsDeletedBeforeRead: [KafkaTopicPartition: [Range<Int64>]] { offsetGaps.withLock { $0.deleted } }

    /// The error the run's last commit, made as it stops, failed with; `nil` when it succeeded or nothing was
    /// committed. Every event was still finished: the events after the group's last commit are processed again by
    /// the next run with the group (a replay resumed with its `--group` replays them again).
    public var finalCommitFailure: (any Error)? { lastCommitFailure.withLock { $0 } }

    /// Whether outputs are written (not a dry run).
    var writesOutputs: Bool { !(replay?.isDryRun ?? false) }

    /// Whether the instants sends are judged at are kept on the timers topic (``DecisionTimes``), so that a send read
    /// again after a crash or a rebalance is judged as it was first: streaming on the wall clock. (A replay keeps
    /// none: by event time its judging never changes, and it does not use the timers topic.)
    var keepsDecisionTimes: Bool {
        guard replay == nil, writesOutputs, case .wallClock = decisionClock else { return false }
        return true
    }

    /// Asks a running pipeline to stop: it stops fetching, drains, commits and returns from ``run()``.
    public func stop() {
        stopSignal.fire()
    }

    /// Asks a running replay to stop as ``stop()`` does, committing nothing from now on: for a replay whose group's
    /// progress is no longer its own (it lost its group's lease, ``ReplayLease/lost()``, and another replay may be
    /// committing in the group), whose commits would set that progress back. What it finished since its last commit
    /// is replayed again by a run that resumes the group. A commit already under way still lands.
    public func stopWithoutCommitting() {
        replayCommits.withLock { $0.isHalted = true }
        stopSignal.fire()
    }

    /// Whether the replay's process was stopped or paused (or starved) while it ran: a wait between its commits lasted
    /// far longer than asked. A lease of its group (``ReplayLease``) may have been lost meanwhile, which librdkafka
    /// can find only after the replay has finished.
    public var wasPausedDuringReplay: Bool { replayCommits.withLock { $0.sawPause } }

    /// Runs until ``stop()``, graceful shutdown, or (with ``PipelineConfiguration/untilIdle``) idleness. A stop while
    /// it starts (its look-ups waiting on the brokers) ends the start-up at once, and it returns without reading.
    ///
    /// - Throws: ``KafkaError`` or ``PipelineRuntimeError`` when it cannot start (no broker, a missing topic,
    ///   mismatched partition counts), or the consumer or a producer fails for good.
    public func run() async throws {
        defer {
            // Also when the start-up ends early (stopped, or failed after the state was folded): counts held back
            // while folding are said (a no-op when the run's end said them already).
            for warning in repeatedWarnings { warning.flush(to: logger) }
            runState.withLock { $0 = RunState(phase: .stopped) }
            runProducers.withLock { $0 = [] }
        }
        logger.info(
            "Pipeline starting",
            metadata: [
                "bootstrap": "\(configuration.bootstrapServers.joined(separator: ","))",
                "group": "\(configuration.groupID)",
                "topic": "\(configuration.topics.sends)",
            ]
        )
        // A plugin registered after another took one of its names (on purpose to override a shipped template, or by
        // mistake): that name's events render with it.
        for override in processor.registry.overrides {
            logger.notice(
                "A template plugin took a name from another; events naming it render with the later one",
                metadata: ["name": "\(override.name)", "from": "\(override.previousTemplateID)", "to": "\(override.templateID)"]
            )
        }
        let producer = try makeProducer(role: .outputs)
        let stateConsumer = try KafkaConsumer(
            configuration: configuration.consumerConfiguration(groupID: nil, role: .state),
            logger: KafkaClientRole.state.logger(logger)
        )
        let followers: StateFollowers
        do {
            // Both wait on the brokers (each look-up up to 10 s when they are gone): a stop asked for meanwhile ends
            // the start-up at once.
            let partitions = try await unlessStopped { try await self.checkTopics(using: stateConsumer) }
            let folded = StateFollowers(
                definitions: StateTopicFollower(consumer: stateConsumer, topic: configuration.topics.definitions, partitionCount: partitions.definitions),
                timers: replay == nil ? StateTopicFollower(consumer: stateConsumer, topic: configuration.topics.timers, partitionCount: partitions.timers) : nil
            )
            try await unlessStopped { try await self.foldState(from: stateConsumer, partitions: partitions, followers: folded) }
            followers = folded
        } catch {
            await stateConsumer.close()
            await producer.close(timeout: .seconds(1))
            if error is StoppedWhileStarting { return logStoppedWhileStarting() }
            throw error
        }
        let sender = OutputSender(
            producer: producer,
            statistics: statistics,
            backoff: configuration.retryBackoff,
            maxBackoff: configuration.maxRetryBackoff,
            logger: logger,
            // Weak: the Kafka sink in the pipeline's routes holds the sender, which would hold the pipeline.
            onFatalError: { [weak self] error in self?.stopBecauseProducerFailed(error) }
        )
        let sinks: [any PushSink]
        do {
            sinks = try await makeRoutes(sender: sender)
        } catch {
            await stateConsumer.close()
            await producer.close(timeout: .seconds(1))
            throw error
        }
        var sendsConfiguration = sendsConsumerConfiguration
        if replay == nil {
            // Weakly: the consumer's librdkafka handle holds this closure, and a look-up abandoned at shutdown (its
            // thread ends in librdkafka's time) holds the handle; a strong reference kept the pipeline alive after
            // `run` returned (found by a CI run of PipelineAccountingTests.mixedEvents). While `run` runs, its caller
            // holds the pipeline.
            sendsConfiguration.willRevokePartitions = { [weak self] partitions in self?.fence(revoked: partitions) }
        }
        let consumer: KafkaConsumer
        // The decision times records go on a producer of their own that sends at once (no `linger.ms`): a batch's
        // outputs wait for them.
        var decisionsProducer: KafkaProducer?
        do {
            consumer = try KafkaConsumer(configuration: sendsConfiguration, logger: KafkaClientRole.sends.logger(logger))
            do {
                if let replay {
                    // Look-ups of committed offsets and of positions by time, on brokers that may not answer.
                    try await unlessStopped { try await self.assignReplayRanges(replay, consumer: consumer) }
                } else {
                    try consumer.subscribe(topics: [configuration.topics.sends])
                }
                if keepsDecisionTimes { decisionsProducer = try makeProducer(role: .decisionTimes, lingering: false) }
            } catch {
                await consumer.close()
                throw error
            }
        } catch {
            for sink in sinks { await sink.shutdown() }
            await stateConsumer.close()
            await producer.close(timeout: .seconds(1))
            if error is StoppedWhileStarting { return logStoppedWhileStarting() }
            throw error
        }
        let decisionsSender = decisionsProducer.map {
            OutputSender(
                producer: $0,
                statistics: statistics,
                backoff: configuration.retryBackoff,
                maxBackoff: configuration.maxRetryBackoff,
                logger: logger,
                onFatalError: { [weak self] error in self?.stopBecauseProducerFailed(error) }
            )
        }
        logger.info("Consuming", metadata: ["topic": "\(configuration.topics.sends)", "group": "\(configuration.groupID)"])
        runState.withLock { $0.phase = .consuming }

        var failure: (any Error)?
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await sender.runRetries() }
            if let decisionsSender {
                group.addTask { await decisionsSender.runRetries() }
            }
            for sink in sinks {
                group.addTask { await sink.run() }
            }
            group.addTask { await self.followSinkStates(sinks, consumer: consumer) }
            group.addTask { await self.keepStoringCompletedPositions(of: consumer) }
            // Not in the group: the final commit waits for the last of these to end, so that an older commit cannot
            // land after it.
            let commitInterval = sendsConfiguration.autoCommitInterval
            let replayCommitter = replay.flatMap { replay in
                writesOutputs ? Task { await self.keepCommittingReplayProgress(replay, consumer: consumer, every: commitInterval) } : nil
            }
            group.addTask { await self.keepFoldingState(from: stateConsumer, followers: followers, sender: sender) }
            // The state consumer is in no group: its events are only the errors it logs itself. Read, so that they
            // do not pile up in the stream's buffer for as long as the pipeline runs (broker restarts, outages).
            group.addTask { for await _ in stateConsumer.events {} }
            if keepsDecisionTimes {
                group.addTask { await self.keepTrimmingDecisionTimes(of: consumer) }
            }
            group.addTask { await self.followAssignments(of: consumer) }
            if let replay {
                group.addTask { await self.stopWhenReplayed(replay, consumer: consumer) }
            } else {
                group.addTask { await self.keepSettlingOffsetGaps(consumer: consumer) }
                if let timersFollower = followers.timers {
                    group.addTask { await self.fireTimers(consumer: consumer, sender: sender, follower: timersFollower) }
                }
            }
            if let idle = configuration.untilIdle {
                group.addTask { await self.stopWhenIdle(for: idle, consumer: consumer, sender: sender) }
            }
            if replay == nil, configuration.progressLogInterval > .zero {
                group.addTask { await self.logProgress(every: self.configuration.progressLogInterval, consumer: consumer) }
            }
            do {
                try await withGracefulShutdownHandler {
                    try await self.processUntilStopped(consumer: consumer, sender: sender, decisionsSender: decisionsSender, followers: followers)
                } onGracefulShutdown: {
                    self.logger.info("Shutdown requested: stopping reads, draining in-flight work, committing")
                    self.stopSignal.fire()
                }
            } catch {
                failure = error
                logger.error("Processing stopped", metadata: ["error": "\(error)"])
            }
            // Whatever ended the processing, everything from here on is shutting down.
            stopSignal.fire()
            // Nothing more is read, and the consumer keeps serving the group: a session lost during the drain (the
            // brokers gone) retires its partitions' events at once instead of at the drain's timeout.
            consumer.stopReading()
            let closingDeadline = ContinuousClock.now + configuration.drainTimeout + Self.commitAndCloseAllowance
            await drain(sender: sender)
            storeCompletedPositions(of: consumer)
            // Jumps of the reading not checked yet (a replay checked all of them before it finished).
            if replay == nil { await settleOffsetGaps(consumer: consumer, timeout: .seconds(1)) }
            if let replay { storeReplayedRangeEnds(replay, consumer: consumer) }
            // A periodic commit under way is waited for only until the final commit's turn: with the brokers gone it
            // waits for a coordinator as long as librdkafka does, past the shutdown's bound.
            if let replayCommitter {
                replayCommitter.cancel()
                _ = await BoundedWait.wait(for: replayCommitter, until: closingDeadline - Self.consumerCloseShare - Self.finalCommitShare)
            }
            // The final commit and the consumers' close are waited for until `closingDeadline` (the close gets at
            // least its last `consumerCloseShare`): with the brokers gone, librdkafka keeps both waiting for a group
            // coordinator until the group's session times out (10 s by default here, 45 s by Kafka's), which can be
            // past the shutdown's bound, while on a cluster that answers a close can rightly take seconds (its leave waits for
            // a join round under way), and one cut short leaves its partitions unread for a session timeout.
            do {
                let limit = Self.limit(until: closingDeadline - Self.consumerCloseShare)
                if let replay {
                    if writesOutputs { try await commitReplayProgress(replay, consumer: consumer, within: limit) }
                } else if writesOutputs {
                    try await consumer.commit(within: limit)
                }
            } catch {
                lastCommitFailure.withLock { $0 = error }
                logger.warning("Final commit failed; the uncommitted events will be processed again", metadata: ["error": "\(error)"])
            }
            // At once, each: with the brokers gone, each close waits out its own bound.
            let closeLimit = Self.limit(until: closingDeadline)
            async let stateConsumerClosed = stateConsumer.close(within: closeLimit)
            let consumerClosed = await consumer.close(within: closeLimit)
            if !consumerClosed {
                logger.warning(
                    "The consumer did not finish closing within \(closeLimit) (no answer from the group coordinator); the group moves its partitions when its session times out"
                )
            }
            _ = await stateConsumerClosed
            group.cancelAll()
        }
        async let decisionsProducerClosed: Void? = decisionsProducer?.close(timeout: Self.producerCloseLimit)
        await producer.close(timeout: Self.producerCloseLimit)
        await decisionsProducerClosed
        // The trackers hold the run's completion, which holds the pipeline and its consumer: let them go with the run.
        progress.withLock { $0 = [:] }
        completedTrackers.withLock { $0 = [:] }
        if failure == nil, let error = producerFailure.withLock({ $0 }) {
            failure = PipelineRuntimeError.producerFailed(reason: "\(error)")
        }
        if failure == nil, let error = groupRefusal.withLock({ $0 }) {
            failure = PipelineRuntimeError.groupRefused(group: configuration.groupID, reason: "\(error)", advice: GroupRefusal.advice(for: error, group: configuration.groupID))
        }
        if failure == nil, let (sink, reason) = sinkStop.withLock({ $0 }) {
            failure = PipelineRuntimeError.sinkStopped(sink: sink, reason: reason.detail)
        }
        for warning in repeatedWarnings + [sender.refusedOutputWarning] { warning.flush(to: logger) }
        let summary = statistics.snapshot
        // Read by this instance with no outcome written by it: in flight at the drain's timeout, or their partition
        // taken away meanwhile. Not committed, so their next reader processes them again.
        let unfinished = summary.unfinished
        logger.info(
            "Pipeline stopped",
            metadata: Self.outcomeMetadata(summary.outcomes, timerExpiries: summary.timersFired).merging([
                "events": "\(summary.totalIn)",
                "unfinished": "\(unfinished)",
                "pendingTimers": "\(timers.count)",
                "outputsRetried": "\(summary.outputsRetried)",
                "deletedUnread": "\(summary.recordsDeletedUnread)",
                "renderedWithWarnings": "\(summary.totalWithWarnings)",
            ]) { $1 }
        )
        if let failure { throw failure }
    }

    // MARK: - Sinks

    /// Builds the sinks of each platform's route (`kafka` on the pipeline's producer; a provided sink of the kind;
    /// otherwise FCM or APNs from the configuration) and publishes the routes.
    ///
    /// - Returns: the distinct sinks, to run.
    private func makeRoutes(sender: OutputSender) async throws -> [any PushSink] {
        var built: [String: any PushSink] = [:]
        var routes: [Platform: [any PushSink]] = [:]
        do {
            try buildRoutes(sender: sender, built: &built, routes: &routes)
        } catch {
            // Sinks built before the failure release their connections.
            for sink in built.values { await sink.shutdown() }
            throw error
        }
        activeRoutes.withLock { $0 = ActiveRoutes(routes) }
        for (platform, sinks) in routes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            logger.info("Sinks", metadata: ["platform": "\(platform.rawValue)", "sinks": "\(sinks.map(\.name).joined(separator: ","))"])
        }
        return Array(built.values)
    }

    private func buildRoutes(sender: OutputSender, built: inout [String: any PushSink], routes: inout [Platform: [any PushSink]]) throws {
        for (platform, kinds) in configuration.sinks.routes {
            for kind in kinds {
                let sink: any PushSink
                if kind == "kafka" {
                    sink = KafkaPayloadSink(topic: platform == .fcm ? configuration.topics.fcm : configuration.topics.apns, sender: sender)
                } else if let existing = built[kind] {
                    sink = existing
                } else if let provided = providedSinks.first(where: { $0.kind == kind }) {
                    sink = provided
                } else if kind == "fcm" {
                    sink = try FCMSender.makeSink(configuration.sinks.fcm, environment: ProcessInfo.processInfo.environment, retry: configuration.sinks.retry, logger: logger)
                } else if kind == "apns" {
                    sink = try APNsSender.makeSink(configuration.sinks.apns, environment: ProcessInfo.processInfo.environment, retry: configuration.sinks.retry, logger: logger)
                } else {
                    throw ConfigurationError(key: "sinks.\(platform.rawValue)", reason: "no sink of kind '\(kind)' (built in: kafka, fcm, apns)")
                }
                if kind != "kafka" { built[kind] = sink }
                routes[platform, default: []].append(sink)
            }
        }
    }

    /// Whether a route sends to something besides the Kafka payload topics (then dead tokens are reported).
    var usesPlatformSinks: Bool {
        configuration.sinks.routes.values.contains { kinds in kinds.contains { $0 != "kafka" } }
    }

    /// Every 100 ms: pauses the partitions with deliveries waiting on a throttled sink, resumes them when it recovers.
    private func followSinkStates(_ sinks: [any PushSink], consumer: KafkaConsumer) async {
        guard !sinks.isEmpty else { return }
        var previous = Set<String>()
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            let throttled = Set(sinks.filter { $0.state == .throttled }.map(\.name))
            throttledSinks.withLock { $0 = throttled }
            hasThrottledSinks.store(!throttled.isEmpty, ordering: .relaxed)
            if throttled != previous {
                if !throttled.isEmpty {
                    logger.warning("Sinks throttled by the platform; partitions waiting on them are paused", metadata: ["sinks": "\(throttled.sorted().joined(separator: ","))"])
                } else {
                    logger.info("Sinks no longer throttled; partitions resume")
                }
                previous = throttled
            }
            for tracker in progress.withLock({ Array($0.values) }) {
                applyBackpressure(to: tracker, consumer: consumer)
            }
        }
    }

    /// A sink stopped for good: stop consuming; ``run()`` ends with ``PipelineRuntimeError/sinkStopped(sink:reason:)``.
    func stopBecauseSinkStopped(_ sink: String, _ failure: SinkFailure) {
        let isFirst = sinkStop.withLock { stop in
            defer { if stop == nil { stop = (sink, failure) } }
            return stop == nil
        }
        guard isFirst else { return }
        logger.error(
            "A sink stopped; the pipeline stops consuming. Events it did not deliver stay uncommitted and are sent after a restart",
            metadata: ["sink": "\(sink)", "reason": "\(failure.detail)"]
        )
        stopSignal.fire()
    }

    /// A producer failed for good: stop consuming; ``run()`` ends with ``PipelineRuntimeError/producerFailed(reason:)``.
    func stopBecauseProducerFailed(_ error: KafkaError) {
        guard Self.keepFirst(error, in: producerFailure) else { return }
        logger.critical(
            "The Kafka producer failed for good; the pipeline stops. Events whose outputs it had not written stay uncommitted and are processed again after a restart",
            metadata: ["error": "\(error)"]
        )
        stopSignal.fire()
    }

    /// The consumer group refused this instance (``KafkaError/isGroupRefusal``): librdkafka asks again for ever, the
    /// instance unready meanwhile. Returns the refusal's serial number when it begins one (none is pending), for
    /// ``stopIfStillRefused(_:)``.
    private func noteGroupRefusal(_ error: KafkaError) -> Int? {
        guard !isStopping else { return nil }
        let serial: Int? = groupRefusalWait.withLock { wait in
            guard wait.pending == nil else { return nil }
            wait = (error, wait.serial + 1)
            return wait.serial
        }
        guard let serial else { return nil }
        logger.warning(
            "The consumer group refuses this instance; the pipeline stops unless the group takes it within \(configuration.groupRefusalTimeout.components.seconds) s (processing.groupRefusalSeconds)",
            metadata: ["group": "\(configuration.groupID)", "error": "\(error)", "fix": "\(GroupRefusal.advice(for: error, group: configuration.groupID))"]
        )
        return serial
    }

    /// Stops the pipeline when refusal `serial` is still pending after ``PipelineConfiguration/groupRefusalTimeout``.
    private func stopIfStillRefused(_ serial: Int) async {
        do {
            try await Task.sleep(for: configuration.groupRefusalTimeout)
        } catch {
            return
        }
        let wait = groupRefusalWait.withLock { $0 }
        guard let pending = wait.pending, wait.serial == serial else { return }
        stopBecauseGroupRefused(pending)
    }

    /// The consumer group refused this instance for ``PipelineConfiguration/groupRefusalTimeout``: stop; ``run()``
    /// ends with ``PipelineRuntimeError/groupRefused(group:reason:advice:)``. Nothing when it stops already (a
    /// SIGTERM's drain, another failure).
    func stopBecauseGroupRefused(_ error: KafkaError) {
        guard !isStopping, Self.keepFirst(error, in: groupRefusal) else { return }
        logger.critical(
            "The consumer group still refuses this instance; the pipeline stops",
            metadata: ["group": "\(configuration.groupID)", "error": "\(error)", "fix": "\(GroupRefusal.advice(for: error, group: configuration.groupID))"]
        )
        stopSignal.fire()
    }

    /// Keeps `error` in `slot` unless it holds one already; whether it was kept (the first).
    private static func keepFirst(_ error: KafkaError, in slot: borrowing Mutex<KafkaError?>) -> Bool {
        slot.withLock { kept in
            guard kept == nil else { return false }
            kept = error
            return true
        }
    }

    // MARK: - Clients

    /// A producer with the configuration's properties; one not `lingering` sends each record at once, whatever
    /// `linger.ms` the properties set.
    private func makeProducer(role: KafkaClientRole, lingering: Bool = true) throws(KafkaError) -> KafkaProducer {
        let producer = try KafkaProducer(
            configuration: configuration.producerConfiguration(role: role, lingering: lingering),
            logger: role.logger(logger)
        )
        runProducers.withLock { $0.append(producer) }
        return producer
    }

    /// The line that ends a run stopped before its start-up ended (``unlessStopped(_:)``); only the counts of warnings
    /// held back while the state was folded can follow it.
    private func logStoppedWhileStarting() {
        logger.info("Pipeline stopped while starting, before it read any event")
    }

    /// Runs `step` of the start-up, given up as soon as the pipeline is asked to stop (``stop()``, or a graceful
    /// shutdown, which before the processing starts nothing else hears): a SIGTERM to an instance whose brokers are
    /// gone ends it at once, not after the look-ups' timeouts and with an error.
    ///
    /// - Throws: ``StoppedWhileStarting`` when the stop came first (the step is cancelled); otherwise what `step`
    ///   threw.
    private func unlessStopped<T: Sendable>(_ step: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: StartUpStep<T>.self) { group in
                group.addTask { .done(try await step()) }
                group.addTask {
                    await self.stopSignal.wait()
                    return .stopped
                }
                defer { group.cancelAll() }
                guard case .done(let value)? = try await group.next() else { throw StoppedWhileStarting() }
                return value
            }
        } onGracefulShutdown: {
            self.logger.info("Shutdown requested while starting: stopping")
            self.stopSignal.fire()
        }
    }

    /// Checks that the topics exist and that the timers topic mirrors the sends topic's partitions.
    ///
    /// - Returns: the partition counts of the definitions and timers topics.
    private func checkTopics(using consumer: KafkaConsumer) async throws -> (definitions: Int32, timers: Int32) {
        let topics = configuration.topics
        var counts: [String: Int32] = [:]
        var needed: [String] =
            switch (replay, writesOutputs) {
            case (nil, _): topics.all.filter { $0 != topics.tokens }
            case (_, true): [topics.sends, topics.definitions] + topics.replayOutputs
            case (_, false): [topics.sends, topics.definitions]
            }
        if writesOutputs, usesPlatformSinks { needed.append(topics.tokens) }
        for topic in needed {
            let result: Result<Int32, KafkaError>
            do throws(KafkaError) {
                result = .success(try await consumer.partitionCount(topic: topic))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let count) where count > 0:
                counts[topic] = count
            case .success:
                throw PipelineRuntimeError.missingTopic(topic)
            case .failure(let error):
                let isUnknown = error.librdkafkaName == "UNKNOWN_TOPIC_OR_PART" || error.librdkafkaName == "_UNKNOWN_TOPIC"
                if isUnknown { throw PipelineRuntimeError.missingTopic(topic) }
                throw error
            }
        }
        let sends = counts[topics.sends] ?? 0
        // A replay schedules no timers.
        guard replay == nil else { return (counts[topics.definitions] ?? 0, 0) }
        let timers = counts[topics.timers] ?? 0
        guard sends == timers else {
            throw PipelineRuntimeError.partitionMismatch(sends: topics.sends, sendsCount: sends, timers: topics.timers, timersCount: timers)
        }
        return (counts[topics.definitions] ?? 0, timers)
    }

    /// Processes events until asked to stop. Cancelling the reading task wakes it when no records arrive.
    private func processUntilStopped(
        consumer: KafkaConsumer,
        sender: OutputSender,
        decisionsSender: OutputSender?,
        followers: StateFollowers
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let completion = EventCompletion { [self] tracker in self.positionAdvanced(in: tracker, consumer: consumer) }
                var iterator = consumer.messages.makeAsyncIterator()
                // A batch is emitted while the next ones are read and decided: its emission waits for the records of
                // the instants it was judged at, and for the previous batch's emission (``EmissionChain``).
                // At most ``emittingBatches`` batches wait to be emitted while another is decided.
                // Every emission has ended when this task does, whatever ends it (draining and the final commit come
                // after): a cancelled or failed reading cancels them first.
                var emissions = EmissionChain()
                do {
                    while !Task.isCancelled, let batch = try await iterator.nextBatch() {
                        guard let decided = await self.decide(batch, consumer: consumer, decisionsSender: decisionsSender, followers: followers) else { continue }
                        emissions.append { await self.emit(decided, consumer: consumer, sender: sender, completion: completion) }
                        await emissions.wait(untilAtMost: Self.emittingBatches)
                    }
                } catch {
                    emissions.cancelAll()
                    await emissions.wait(untilAtMost: 0)
                    throw error
                }
                if Task.isCancelled { emissions.cancelAll() }
                await emissions.wait(untilAtMost: 0)
            }
            group.addTask {
                await self.stopSignal.wait()
            }
            // Whichever ends first (a stop request, the end of the records, an error) ends both.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// How long after the drain's timeout a stopping pipeline still waits for its final commit and its consumers'
    /// close, together. With the producers' ``producerCloseLimit`` a stop ends within the drain timeout and 11 s,
    /// inside the CLI's bound (the drain timeout and 15 s); on a cluster that answers, each usually takes
    /// milliseconds.
    static let commitAndCloseAllowance: Duration = .seconds(6)

    /// The part of ``commitAndCloseAllowance`` kept for the consumers' close, however long the commit waited.
    static let consumerCloseShare: Duration = .seconds(3)

    /// The part of ``commitAndCloseAllowance`` before the close's kept for the final commit, however long a replay's
    /// periodic commit under way was waited for.
    static let finalCommitShare: Duration = .seconds(1)

    /// The time left until `deadline`, and at least a second, to a tenth of a second.
    static func limit(until deadline: ContinuousClock.Instant) -> Duration {
        max(.seconds(1), deadline - .now).roundedToTenths
    }

    /// How long a stopping pipeline's producers may flush what is left before they close (records not acknowledged
    /// by then are reported as not delivered; their events stay uncommitted).
    static let producerCloseLimit: Duration = .seconds(5)

    /// How many decided batches can wait to be emitted (each for its decision times records and the batch before it)
    /// while the next one is decided. Three: a batch's records are sent once it is decided (they hold the horizon
    /// each send was decided against), so their round trip no longer overlaps the batch's rendering; with two, the
    /// bench's pipeline run lost about a sixth of its speed waiting for them.
    static let emittingBatches = 3

    /// Waits until nothing is in flight (or the drain timeout passes, or a producer failed for good: nothing in
    /// flight can finish then).
    private func drain(sender: OutputSender) async {
        let deadline = ContinuousClock.now + configuration.drainTimeout
        // Events a stopped sink abandoned never complete; they stay uncommitted.
        var inFlight = totalUnfinished()
        while inFlight > 0 || sender.pendingRetries > 0 {
            if producerFailure.withLock({ $0 != nil }) {
                logger.warning(
                    "Not draining: the producer failed; in-flight events stay uncommitted and will be processed again",
                    metadata: ["inFlight": "\(inFlight)", "retrying": "\(sender.pendingRetries)"]
                )
                return
            }
            if ContinuousClock.now >= deadline {
                logger.warning(
                    "Drain timed out; in-flight events stay uncommitted and will be processed again",
                    metadata: ["inFlight": "\(inFlight)", "retrying": "\(sender.pendingRetries)"]
                )
                return
            }
            try? await Task.sleep(for: .milliseconds(10))
            inFlight = totalUnfinished()
        }
        let unacknowledged = sender.unacknowledgedRecords
        if unacknowledged > 0 {
            // The assigned partitions' events are done; outputs of partitions taken away meanwhile (a lost session),
            // or not tied to an event (timer records), can still wait for the brokers. Nothing is committed for them
            // here: a partition's new owner processes its events again.
            logger.info(
                "Drained the in-flight events; output records still wait for the brokers (of partitions taken away during the run, or timer records) and are flushed as the producer closes",
                metadata: ["unacknowledgedRecords": "\(unacknowledged)"]
            )
        } else {
            logger.info("Drained in-flight work")
        }
    }

    func totalInFlight() -> Int {
        progress.withLock { $0.values.reduce(0) { $0 + $1.inFlight } }
    }

    /// Events still waiting for an output (not done, not given up by a stopped sink), over every partition.
    func totalUnfinished() -> Int {
        progress.withLock { $0.values.reduce(0) { $0 + $1.unfinished } }
    }

    /// Whether the pipeline was asked to stop (or stops by itself).
    var isStopping: Bool { stopSignal.isFired }

    /// Keeps the per-partition trackers in step with the group's assignment. A streaming pipeline also checks where
    /// each new reading starts (``checkCommittedStarts(of:consumer:)``), beside the events that follow.
    private func followAssignments(of consumer: KafkaConsumer) async {
        await withDiscardingTaskGroup { checks in
            for await event in consumer.events {
                follow(event, of: consumer)
                if replay == nil, case .partitionsAssigned(let partitions) = event {
                    checks.addTask { await self.checkCommittedStarts(of: partitions, consumer: consumer) }
                }
                // A replay joins no group (its consumer only looks up its group's coordinator, which a dry run does
                // not need): a streaming instance is the one its group can refuse.
                if replay == nil, case .error(let error) = event, error.isGroupRefusal, let serial = noteGroupRefusal(error) {
                    checks.addTask { await self.stopIfStillRefused(serial) }
                }
            }
        }
    }

    /// Keeps the per-partition trackers in step with one change of the group's assignment.
    private func follow(_ event: KafkaConsumer.Event, of consumer: KafkaConsumer) {
        switch event {
        case .partitionsAssigned(let partitions):
            // The group took this instance: a refusal before is over.
            groupRefusalWait.withLock { $0.pending = nil }
            let count = consumer.assignment.count
            runState.withLock { state in
                state.hasJoinedGroup = true
                state.assignedPartitions = count
            }
            logger.info("Assigned", metadata: ["partitions": "\(partitions.map(\.description).sorted().joined(separator: ","))"])
        case .partitionsRevoked(let partitions), .partitionsLost(let partitions):
            // Abandon in-flight work of revoked partitions: it was not committed, so their new owner
            // processes it again (at least once; outputs carry the same message ids).
            // The event arrives after the fact: a partition given straight back may already have a tracker
            // for its new reading (a newer generation), which stays.
            // (A partition paused for backpressure comes back unpaused: the consumer lifts a revoked partition's
            // pause.)
            let retired = progress.withLock { progress in
                partitions.compactMap { partition -> PartitionProgress? in
                    guard let tracker = progress[partition], !consumer.isReading(partition, generation: tracker.generation) else {
                        return nil
                    }
                    return progress.removeValue(forKey: partition)
                }
            }
            for tracker in retired { tracker.retire() }
            readPositions.withLock { positions in
                for partition in partitions { positions[partition] = nil }
            }
            let count = consumer.assignment.count
            let isLost: Bool
            if case .partitionsLost = event { isLost = true } else { isLost = false }
            runState.withLock { state in
                state.assignedPartitions = count
                // Out of the group (its session timed out): not taking its share until the group assigns it again.
                if isLost { state.hasJoinedGroup = false }
            }
            if isLost {
                logger.warning(
                    "Lost the consumer group's assignment (its session timed out, or the coordinator no longer knew it): not ready until the group assigns partitions again; their uncommitted events are processed again by their next owner",
                    metadata: ["partitions": "\(partitions.map(\.description).sorted().joined(separator: ","))"]
                )
            } else {
                logger.info("Revoked", metadata: ["partitions": "\(partitions.map(\.description).sorted().joined(separator: ","))"])
            }
        case .error(let error):
            // The consumer logs it at warning itself.
            logger.debug("Consumer reported an error", metadata: ["error": "\(error)"])
        }
    }

    /// The configuration of the consumer of the sends topic.
    var sendsConsumerConfiguration: KafkaConsumerConfiguration {
        var sendsConfiguration = configuration.consumerConfiguration(groupID: configuration.groupID, role: .sends)
        // A replay commits its progress itself, with the range it is progress in (`commitReplayProgress`).
        if !writesOutputs || replay != nil { sendsConfiguration.isAutoCommitEnabled = false }
        if replay != nil {
            // A replay reads its ranges only: a position retention deleted meanwhile is read again from the first
            // record stored, never from the partition's end, whatever `auto.offset.reset` the streaming deployment's
            // configuration gives (`latest` skipped the rest of the range, records still there; found by review).
            sendsConfiguration.properties["auto.offset.reset"] = "earliest"
        }
        return sendsConfiguration
    }

    /// The instant time-dependent decisions are judged at for an event read now.
    func decisionTime() -> Timestamp? {
        switch decisionClock {
        case .wallClock: Timestamp.now()
        case .eventTime: nil
        }
    }
}

/// The followers of the pipeline's state topics, to wait until the state has read them to their end.
struct StateFollowers: Sendable {
    let definitions: StateTopicFollower
    /// `nil` in a replay, which fires no timers and keeps no decision times.
    let timers: StateTopicFollower?
}

/// Why the pipeline could not start.
public enum PipelineRuntimeError: Error, CustomStringConvertible, Equatable {
    /// A configured topic does not exist on the cluster.
    case missingTopic(String)
    /// The timers topic must have as many partitions as the sends topic.
    case partitionMismatch(sends: String, sendsCount: Int32, timers: String, timersCount: Int32)
    /// A sink stopped for good (the platform refused its credentials); the pipeline stopped consuming.
    case sinkStopped(sink: String, reason: String)
    /// A Kafka producer failed for good (librdkafka's fatal error, such as an idempotent producer's broken sequence);
    /// the pipeline stopped consuming.
    case producerFailed(reason: String)
    /// The consumer group refused this instance (its principal may not use the group, a session timeout outside the
    /// brokers' bounds, a member of another protocol, a full group) for ``PipelineConfiguration/groupRefusalTimeout``;
    /// the pipeline stopped.
    case groupRefused(group: String, reason: String, advice: String)

    public var description: String {
        switch self {
        case .missingTopic(let topic):
            "topic '\(topic)' does not exist; create it (see docker-compose.yml's kafka-init) or fix the topic name in the configuration"
        case .partitionMismatch(let sends, let sendsCount, let timers, let timersCount):
            "topic '\(timers)' has \(timersCount) partitions but '\(sends)' has \(sendsCount); they must match (timers live in their send's partition). A broker that creates topics on first use (the embedded one does) may just have created one of them under a misspelt name"
        case .sinkStopped(let sink, let reason):
            "sink \(sink) stopped: \(reason). The pipeline stopped consuming; nothing after the last delivered event was committed. Fix the sink's credentials and restart"
        case .producerFailed(let reason):
            "the Kafka producer failed for good: \(reason). The pipeline stopped consuming; events whose outputs were not written stay uncommitted. Restart to go on with a new producer"
        case .groupRefused(let group, let reason, let advice):
            "the consumer group \(group) refuses this instance: \(reason). The pipeline stopped; what it had read and not committed is read again by the group. To fix: \(advice); then restart"
        }
    }
}

/// The pipeline was asked to stop before its start-up ended (``CampaignPipeline/run()`` then returns normally).
struct StoppedWhileStarting: Error {}

/// How a start-up step raced with a stop (``CampaignPipeline/unlessStopped(_:)``).
private enum StartUpStep<T: Sendable>: Sendable {
    case done(T)
    case stopped
}

/// A one-shot signal: ``fire()`` wakes every ``wait()``, now and later. A cancelled waiter returns too.
final class StopSignal: Sendable {
    private struct State {
        var isFired = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    var isFired: Bool { state.withLock { $0.isFired } }

    func fire() {
        let waiters = state.withLock { state in
            state.isFired = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.isFired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}

/// The sinks of each platform, and their names as `push.delivered` gives them (made once, not per event).
struct ActiveRoutes: Sendable {
    /// One platform's sinks.
    struct Route: Sendable {
        /// The sinks, in route order.
        let sinks: [any PushSink]
        /// Their names joined with commas in route order; `nil` without sinks.
        let names: String?
        /// Per sink, whether a partition's deliveries waiting on it are counted (``PartitionProgress/wait(on:_:)``),
        /// to pause the partition while the sink is throttled: only for sinks that can be
        /// (``PushSink/canBeThrottled``; not the built-in Kafka sink), read once per run rather than per event.
        let countsWaits: [Bool]

        init(_ sinks: [any PushSink]) {
            self.sinks = sinks
            self.names = sinks.isEmpty ? nil : sinks.map(\.name).joined(separator: ",")
            self.countsWaits = sinks.map(\.canBeThrottled)
        }
    }

    private let fcm: Route
    private let apns: Route

    init(_ sinks: [Platform: [any PushSink]]) {
        fcm = Route(sinks[.fcm] ?? [])
        apns = Route(sinks[.apns] ?? [])
    }

    /// The route of `platform` (a switch, not a dictionary hashed for every event).
    subscript(platform: Platform) -> Route {
        switch platform {
        case .fcm: fcm
        case .apns: apns
        }
    }
}

extension Duration {
    /// To the nearest tenth of a second: a limit computed from a deadline is a hair under a round number, and prints
    /// in full ("9.999973529 seconds").
    var roundedToTenths: Duration {
        let (seconds, attoseconds) = components
        return .milliseconds(((Double(seconds) + Double(attoseconds) / 1e18) * 10).rounded() * 100)
    }
}
