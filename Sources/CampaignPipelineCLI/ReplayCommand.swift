import ArgumentParser
import Foundation
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime
import ServiceLifecycle
import UnixSignals

/// `campaign-pipeline replay`: re-render a time or offset range of a topic, safely.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-render a time or offset range of the sends topic (backfill), by default into separate replay.* topics.",
        discussion: """
            Reads the range [--from, --to) of each partition in a consumer group of its own and runs every \
            event through the pipeline again. Decisions that depend on time (TTL expiry, timers that already \
            ended, campaign cancellations and definitions) use each event's own time, its occurredAt, so \
            replaying the same range gives the same outcomes whenever it runs (not always the live run's: that \
            judged each send when it first read it, and expired those read too late); with --deliver they use \
            the current time, as a live run does, so nothing that has expired or was cancelled by now is sent to \
            phones. Timer expiries are not scheduled. --from and --to select records by their Kafka timestamps \
            (or offsets), not by occurredAt.

            SAFE BY DEFAULT: outputs go to topics named with --output-prefix (default 'replay.': \
            replay.push.fcm, replay.push.apns, replay.campaign.analytics, replay.campaign.dlq), never to the \
            live sinks: the FCM and APNs HTTP sinks are not used even when configured (nor their credentials \
            needed). Only --deliver writes \
            to the live topics and sends through the configured sinks, to phones; it must be given \
            explicitly. --dry-run renders and counts without writing anything at all.

            Boundaries: 'beginning', 'end' (for --to: the end offsets when the replay starts, so it always \
            terminates even while producers keep writing), an RFC 3339 time (the first record at or after it; \
            --from is included, --to excluded; where the broker's time index cannot be used, the records' \
            timestamps are searched, which assumes they do not go backwards within a partition), or offsets \
            per partition '0:1200,1:980' (offsets in --from replay only the partitions they name, and offsets \
            in --to may then name only those; otherwise offsets in --to must name every partition). A range \
            that does not fit the topic (a partition it lacks, an end before its start) is refused with status \
            64, as is a --group that is the live pipeline's.

            Resumable: interrupt it (Ctrl-C) and run it again with the same --group, --from and --to to continue \
            where it stopped; it says how many records are left, and when its group has replayed the whole range \
            already, says so and exits 0 without reading. A group keeps the progress of one range into one \
            destination (recorded with its commits): a --group that replayed another range, or the same range \
            into other topics (--deliver after a replay into replay.*), is refused with status 64; give a new \
            one. One replay runs in a --group at a time: a second one started meanwhile (a scheduled job that \
            overlaps) is refused with status 75, and can be run again once the first has ended; a replay that \
            was killed holds its group until its session times out (10 s by default): one started meanwhile \
            waits for that (on the embedded broker it can fail after 60 s instead; run it again). A replay with \
            --group, unless --dry-run, holds it through a consumer group of its own, <group>.replay-lease, which \
            reads nothing (on a cluster with ACLs, its principal needs that group too); a replay that loses it \
            while it runs (its process stopped, or cut off from its brokers, for longer than session.timeout.ms: \
            another may have taken it) stops, commits nothing more and exits with status 75. \
            --to end is the end when each run starts, a resumed one too. An interrupted replay exits with \
            status 1, so that a script or job does not take it for a finished one; one whose cluster does not \
            answer (down, unreachable, or refusing the TLS or SASL settings) exits with status 69 before it reads \
            anything, and one with a setting it cannot use (the file, a variable, a Kafka property, with \
            --deliver a sink's credentials) with status 78. Records of the range the \
            topic deleted before the replay could read them (its retention reached the range while the replay \
            ran or before it resumed, or --from gave offsets it no longer holds) cannot be replayed: the replay \
            goes on with the rest, names them, and exits with status 3. \
            Progress shows the rate of the last ten seconds, and says when nothing moved for ten seconds or more.
            """
    )

    @OptionGroup var connection: KafkaConnectionOptions

    @Option(help: ArgumentHelp("Where to start: beginning, an RFC 3339 time, or partition:offset,… (included).", valueName: "boundary"))
    var from: String

    @Option(help: ArgumentHelp("Where to stop: end, an RFC 3339 time, or partition:offset,… (excluded).", valueName: "boundary"))
    var to: String = "end"

    @Option(help: ArgumentHelp("The topic to replay (default: the configured sends topic, campaign.sends).", valueName: "name"))
    var topic: String?

    @Option(help: ArgumentHelp("The replay's consumer group; give the same one, with the same range, to resume an interrupted replay (default: a new one per run).", valueName: "name"))
    var group: String?

    /// The prefix of the topics a replay writes to, unless told otherwise (`broker` creates those topics).
    static let defaultOutputPrefix = "replay."

    @Option(help: ArgumentHelp("Prefix of the output topics (default: '\(Self.defaultOutputPrefix)'; not with --deliver, which writes to the live topics).", valueName: "prefix"))
    var outputPrefix: String?

    /// The prefix of the topics written to (unless `--deliver`): `--output-prefix`, or ``defaultOutputPrefix``.
    var prefix: String { outputPrefix ?? Self.defaultOutputPrefix }

    @Flag(help: "Write to the LIVE output topics and send through the configured FCM/APNs sinks: phones get the notifications again. Never implied.")
    var deliver = false

    @Flag(help: "Render and count only: write nothing to any topic and commit nothing.")
    var dryRun = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        for (option, value) in [("--group", group), ("--topic", topic)] where value?.isEmpty == true {
            throw ValidationError("\(option) must not be empty")
        }
        if deliver && dryRun { throw ValidationError("--deliver and --dry-run exclude each other") }
        // Given with --deliver, a prefix would be ignored: the operator may have meant a replay into prefixed topics.
        if deliver, let outputPrefix {
            throw ValidationError("--output-prefix '\(outputPrefix)' and --deliver exclude each other: --deliver writes to the live topics and sends to phones")
        }
        if !deliver && prefix.isEmpty {
            throw ValidationError("--output-prefix must not be empty: an empty prefix would write to the live topics; use --deliver for that")
        }
        if !deliver, let character = prefix.first(where: { !Self.isTopicNameCharacter($0) }) {
            throw ValidationError(
                "--output-prefix '\(prefix)' contains '\(character)': a Kafka topic name takes only ASCII letters, digits, '.', '_' and '-'"
            )
        }
        _ = try boundaries()
    }

    private func boundaries() throws -> (ReplayBoundary, ReplayBoundary) {
        do {
            let start = try ReplayBoundary(parsing: from, option: "--from")
            let end = try ReplayBoundary(parsing: to, option: "--to")
            if start == .end { throw ValidationError("--from end would replay nothing") }
            if end == .beginning { throw ValidationError("--to beginning would replay nothing") }
            if case .time(let first) = start, case .time(let last) = end, first >= last {
                throw ValidationError("--from \(from) is not before --to \(to): the range would be empty")
            }
            return (start, end)
        } catch let error as ConfigurationError {
            throw ValidationError("\(error.key): \(error.reason)")
        }
    }

    func run() async throws {
        let logger = try logging.makeLogger(label: "campaign-pipeline.replay")
        // Without --deliver the FCM and APNs sinks are not used: their credentials are not needed.
        var configuration = try connection.configuration(environment: ProcessInfo.processInfo.environment, checkingSinkCredentials: deliver)
        guard !configuration.bootstrapServers.isEmpty else {
            throw CommandError.configuration(
                "no Kafka bootstrap servers configured: pass --bootstrap-servers, set CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS, or set kafka.bootstrapServers in the --config file"
            )
        }
        if let group, group == configuration.groupID {
            // A usage error, refused with status 64 as the other groups a replay cannot use are.
            throw ValidationError(
                "--group \(group) is the live pipeline's consumer group: a replay commits its progress in its group, which would move the live pipeline past unsent events; give another name, or none for a new one"
            )
        }
        // The lease group subscribes to the configuration's own topics, not --topic: every replay of a group then
        // subscribes to the same ones, which the lease's count of partitions needs.
        let leaseConfiguration = configuration
        if let topic { configuration.topics.sends = topic }
        if !deliver {
            // Without --deliver nothing reaches a device: payloads go to the prefixed Kafka topics only.
            configuration.topics = configuration.topics.prefixingOutputs(with: prefix)
            configuration.sinks.routeToKafkaOnly()
        }
        configuration.groupID = group ?? Self.freshGroupName()
        configuration.untilIdle = nil
        // Before any client, naming where a property librdkafka refuses was set.
        try configuration.validateKafkaProperties()

        let (start, end) = try boundaries()
        // With the pipeline's own client properties (TLS, SASL, …), in no group.
        let lookup = try KafkaConsumer(
            configuration: configuration.consumerConfiguration(groupID: nil, role: .replayLookup),
            logger: KafkaClientRole.replayLookup.logger(logger)
        )
        let ranges: [KafkaTopicPartition: Range<Int64>]
        do {
            ranges = try await ReplayBoundary.resolve(from: start, to: end, topic: configuration.topics.sends, using: lookup)
        } catch let error as ConfigurationError {
            await lookup.close()
            // A range that does not fit the topic is a usage error, as one wrong in itself is.
            throw ValidationError("\(error.key): \(error.reason)")
        } catch {
            await lookup.close()
            throw error
        }
        await lookup.close()
        let output: ReplayOutput = deliver ? .live : .prefixed(prefix)
        let plan = ReplayPlan(ranges: ranges, isDryRun: dryRun, from: start, to: end, output: output)
        // One replay at a time in a group given by name (a new group is this replay's alone, and a dry run commits
        // nothing): a second would replay the range again, and with --deliver send to phones twice.
        var lease: ReplayLease?
        if let group, !dryRun {
            do {
                // A new group's join takes about 3 s; longer, the user is told what it waits for.
                lease = try await withNotice(after: Self.leaseWaitNotice) {
                    Self.report(
                        "Waiting for the lease of --group \(group) (its lease group \(ReplayLease.leaseGroup(of: group)) is answering slowly; "
                            + "a replay of the group that was killed stays there until its session times out, 10 s by default)…"
                    )
                } _: {
                    try await ReplayLease.acquire(group: group, configuration: leaseConfiguration, logger: logger)
                }
            } catch let busy as ReplayGroupBusy {
                FileHandle.standardError.write(Data("Error: \(busy)\n".utf8))
                throw ExitCode(Self.groupBusyStatus)
            }
        }
        do {
            try await replay(plan, from: start, to: end, output: output, lease: lease, configuration: configuration, logger: logger)
        } catch {
            await lease?.release()
            throw error
        }
        await lease?.release()
    }

    /// Replays `plan` (after the checks of the command line and the group's lease), stopping if `lease` is lost.
    private func replay(
        _ plan: ReplayPlan,
        from start: ReplayBoundary,
        to end: ReplayBoundary,
        output: ReplayOutput,
        lease: ReplayLease?,
        configuration: PipelineConfiguration,
        logger: Logger
    ) async throws {
        let ranges = plan.ranges
        // A group given again resumes where it stopped, in the same range: say how much that leaves, and stop here when
        // it is nothing (a scheduled job reusing a group name would otherwise replay nothing while saying it replays
        // everything). A group that replayed another range is refused before anything is said of this one.
        var remaining: Int64?
        if group != nil, !dryRun, plan.totalCount > 0 {
            do {
                remaining = try await Self.remainingCount(of: plan, group: configuration.groupID, configuration: configuration, logger: logger)
            } catch let conflict as ReplayGroupConflict {
                throw ValidationError(conflict.description)
            }
        }

        let destination = dryRun ? "nothing (dry run)" : output.description
        // Counts of offsets, not records: transaction markers (and records of aborted transactions) take offsets that
        // hold nothing to replay, so the records replayed can be fewer ("Replaying 306 records" for 300 used to be said).
        Self.report("Replaying up to \(plan.totalCount) records of \(configuration.topics.sends) [\(start) .. \(end)) into \(destination)")
        if let remaining {
            if remaining == 0 {
                Self.report(
                    "Note: group \(configuration.groupID) has already replayed this whole range: nothing is left to do. Run without --group (or with a new one) to replay it again."
                )
                return
            }
            if remaining < plan.totalCount {
                Self.report("Resuming group \(configuration.groupID): up to \(remaining) of the \(plan.totalCount) records are left")
            }
        }
        if plan.totalCount == 0 {
            Self.report(
                "Note: nothing to replay: \(configuration.topics.sends) has no records in this range (\(ranges.count) partitions). Check the topic name (--topic) and the range."
            )
        }
        if dryRun {
            Self.report("Group: \(configuration.groupID) (a dry run commits nothing: run again, it starts over)")
        } else {
            Self.report("Group: \(configuration.groupID) (to resume if interrupted, run again with \(resumeOptions(group: configuration.groupID)))")
        }

        let display = ProgressDisplay(isTerminal: isatty(STDOUT_FILENO) == 1)
        let pipeline = CampaignPipeline(
            configuration: configuration,
            registry: BuiltinTemplates.registry,
            replay: plan,
            progress: { display.show($0) },
            // Sending to phones now: judged now (see the discussion above).
            decisionClock: deliver ? .wallClock : .eventTime,
            logger: logger
        )
        let ending = try await Self.run(pipeline, under: lease, logger: logger) { watch in
            try await pipeline.runUntilSignalled(logger: logger, shutdownLimit: configuration.shutdownLimit, alongside: watch)
        }
        let summary = pipeline.statistics.snapshot
        let outcomes = Self.outcomeCounts(summary.outcomes)
        if let lost = ending.lost, !pipeline.hasFinishedReplay {
            try stopForLostLease(lost, pipeline: pipeline, configuration: configuration, ending: ending)
        }
        guard pipeline.hasFinishedReplay else {
            // Stopped by a signal before the range's end: not a success, or a script or job would go on as if the
            // range had been replayed.
            Self.report(Self.interruptedSummary(read: summary.totalIn, outcomes: summary.outcomes, unfinished: summary.unfinished, isDryRun: dryRun))
            throw CommandError(
                dryRun
                    ? "the replay was interrupted before the end of its range; a dry run commits nothing, so run it again to replay the whole range"
                    : "the replay was interrupted before the end of its range; run it again with \(resumeOptions(group: configuration.groupID)) to continue where it stopped"
            )
        }
        // A dry run's outcomes are those the records would have had: "delivered" alone read as if something was sent.
        Self.report("Replayed \(summary.totalIn) records\(dryRun ? " (dry run: nothing written; the outcomes they would have had)" : ""): \(outcomes)")
        if let lost = ending.lost {
            // Lost at the very end: the range is replayed, but not only by this replay.
            FileHandle.standardError.write(Data("Note: \(lost); it had replayed its whole range by then, but the other may have replayed some of it again\n".utf8))
        }
        if let failure = pipeline.finalCommitFailure, !dryRun {
            // Every record was replayed; what the group records of it is behind. Said here, not only in the log: run
            // again with the group, the replay would say how many are left and write them again.
            Self.report(
                "Note: group \(configuration.groupID)'s last progress was not committed (\(failure)): run again with --group "
                    + "\(configuration.groupID), the replay would take the records after its last commit as left and replay them again"
            )
        }
        let deleted = pipeline.offsetsDeletedBeforeRead
        if !deleted.isEmpty {
            FileHandle.standardError.write(Data((Self.deletedRecordsMessage(deleted, topic: configuration.topics.sends) + "\n").utf8))
            throw ExitCode(Self.deletedRecordsStatus)
        }
    }

    /// Ends a replay that lost its lease before the end of its range: another replay of the group may be running, so
    /// it is said apart from an interruption, with EX_TEMPFAIL as a replay refused for it is. (A dry run takes no
    /// lease.)
    ///
    /// - Parameter ending: how the run ended: whether the loss stopped it, or it failed or was signalled first.
    private func stopForLostLease(
        _ lost: ReplayLeaseLost,
        pipeline: CampaignPipeline,
        configuration: PipelineConfiguration,
        ending: LeasedRunEnding
    ) throws -> Never {
        let summary = pipeline.statistics.snapshot
        Self.report(Self.interruptedSummary(read: summary.totalIn, outcomes: summary.outcomes, unfinished: summary.unfinished, isDryRun: dryRun))
        FileHandle.standardError.write(
            Data(
                ("Error: \(lost). \(Self.howItStopped(ending)): once no other replay of the group runs, run it again with "
                    + "\(resumeOptions(group: configuration.groupID)) to continue from the group's progress.\n").utf8
            )
        )
        throw ExitCode(Self.groupBusyStatus)
    }

    /// How a replay that lost its lease stopped, and what that means for its commits. A pipeline the loss did not stop
    /// (it failed, or was signalled, first) made its last commit without knowing.
    static func howItStopped(_ ending: LeasedRunEnding) -> String {
        if ending.stoppedByLoss {
            "It stopped, and committed nothing once it knew (the group's progress is the other replay's now)"
        } else if let failure = ending.failure {
            "It failed as it lost the lease (\(failure)), and may have committed its progress once more before the loss was known"
        } else {
            "It was stopped before the loss was known, and may have committed its progress once more"
        }
    }

    /// How a replay's pipeline run under its group's lease ended, besides what its statistics say.
    struct LeasedRunEnding {
        /// How the replay lost its lease, if it did: while it ran (the watch stopped it then), or as its run ended.
        var lost: ReplayLeaseLost?
        /// What the pipeline failed with, when it failed as it lost the lease. (A failure with the lease held is
        /// thrown.)
        var failure: (any Error)? = nil
        /// Whether the loss stopped the replay (its watch saw it while the pipeline ran), which then committed nothing
        /// more. A loss found once the run had ended came after its last commit, which may have come after the loss.
        var stoppedByLoss = false
    }

    /// Runs `pipeline` through `runPipeline` (given the services to run beside it) with a ``ReplayLeaseWatch`` of
    /// `lease` beside it, which stops the replay, committing nothing more, if the lease is lost.
    ///
    /// A pipeline that fails before the end of its range as the lease is lost (a look-up timed out across the same
    /// pause of the process, or the same outage) ends as a loss, not as its failure: whether to run the replay again
    /// depends on the other replay.
    ///
    /// - Throws: what the pipeline failed with, when the lease was not lost (or there is none), or the pipeline had
    ///   finished its range.
    static func run(
        _ pipeline: CampaignPipeline,
        under lease: ReplayLease?,
        logger: Logger,
        _ runPipeline: (_ alongside: [any Service]) async throws -> Void
    ) async throws -> LeasedRunEnding {
        let watch = lease.map { ReplayLeaseWatch(lease: $0, pipeline: pipeline, logger: logger) }
        do {
            try await runPipeline(watch.map { [$0] } ?? [])
        } catch {
            guard !pipeline.hasFinishedReplay, let lease else { throw error }
            // The watch, ended with the run, may not have seen the loss; the member's id tells it.
            var lost = watch?.lost
            if lost == nil { lost = await lease.loss(within: ReplayLease.sessionCheckWait) }
            guard let lost else { throw error }
            return LeasedRunEnding(lost: lost, failure: error)
        }
        if let lost = watch?.lost { return LeasedRunEnding(lost: lost, stoppedByLoss: true) }
        // A run that ended soon after its process ran again (it finished its range, or was signalled) can end before
        // the watch sees the loss: the member's id is asked too, for a while after a pause.
        return LeasedRunEnding(lost: await lease?.loss(within: pipeline.wasPausedDuringReplay ? ReplayLease.sessionCheckWait : .zero))
    }

    /// The options that resume this replay, quoted for a shell: the group, the range as given and the destination
    /// (a resumed replay must name the same range into the same topics, or its group is refused), and the topic read.
    func resumeOptions(group: String) -> String {
        var options = ["--group", group, "--from", from, "--to", to]
        if let topic { options += ["--topic", topic] }
        if deliver {
            options.append("--deliver")
        } else if prefix != Self.defaultOutputPrefix {
            options += ["--output-prefix", prefix]
        }
        return options.map(Self.shellQuoted).joined(separator: " ")
    }

    /// `word` as a shell reads it back: as it is when it has only characters no shell treats specially, otherwise in
    /// single quotes.
    static func shellQuoted(_ word: String) -> String {
        let isPlain = !word.isEmpty && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:,/+=@".contains($0)) }
        return isPlain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// The line said when a replay is interrupted: the records read, each outcome, and the records read whose outcome
    /// was not written (they are replayed again when the replay resumes), so that the numbers add up.
    static func interruptedSummary(read: Int, outcomes: [AnalyticsEvent.Kind: Int], unfinished: Int, isDryRun: Bool) -> String {
        let after = isDryRun ? "" : " (replayed again when the replay resumes)"
        return "Interrupted after \(read) records read: \(outcomeCounts(outcomes)), unfinished \(unfinished)\(after)"
    }

    /// Each outcome's count, `delivered 3, failed 0, …`, in the order of ``AnalyticsEvent/Kind``.
    static func outcomeCounts(_ outcomes: [AnalyticsEvent.Kind: Int]) -> String {
        AnalyticsEvent.Kind.allCases.map { "\($0.name) \(outcomes[$0] ?? 0)" }.joined(separator: ", ")
    }

    /// The exit status of a replay that finished without the records the topic deleted before it could read them.
    static let deletedRecordsStatus: Int32 = 3

    /// How long a replay waits for its group's lease before it says that it waits.
    static let leaseWaitNotice: Duration = .seconds(6)

    /// The exit status when another replay runs in the group given (sysexits' `EX_TEMPFAIL`: try again later).
    static let groupBusyStatus: Int32 = 75

    /// Names the offsets of the range whose records were deleted before the replay read them.
    static func deletedRecordsMessage(_ deleted: [KafkaTopicPartition: [Range<Int64>]], topic: String) -> String {
        let count = deleted.values.joined().reduce(0) { $0 + $1.count }
        let places = deleted.sorted { $0.key.partition < $1.key.partition }.map { partition, ranges in
            "partition \(partition.partition) offsets \(ranges.map { "\($0.lowerBound)..<\($0.upperBound)" }.joined(separator: ", "))"
        }
        return "Error: up to \(count) records of the range were deleted from \(topic) (by its retention, or a deletion of records) "
            + "before the replay could read them, and are not replayed: \(places.joined(separator: "; ")). Every other record of the range "
            + "was. Replay ranges well inside the topic's retention; --from beginning starts at the first record stored."
    }

    /// The records of `plan` that `group` has not committed past in this range.
    ///
    /// - Throws: ``ReplayGroupConflict`` when the group has commits that are not progress in this range.
    static func remainingCount(of plan: ReplayPlan, group: String, configuration: PipelineConfiguration, logger: Logger) async throws -> Int64 {
        let consumer = try KafkaConsumer(
            configuration: configuration.consumerConfiguration(groupID: group, role: .replayLookup),
            logger: KafkaClientRole.replayLookup.logger(logger)
        )
        do {
            let committed = try await consumer.committedWithMetadata(plan.ranges.keys.sorted { $0.partition < $1.partition })
            await consumer.close()
            return try plan.remainingCount(after: committed, group: group)
        } catch {
            await consumer.close()
            throw error
        }
    }

    /// Whether Kafka allows `character` in a topic name.
    static func isTopicNameCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "." || character == "_" || character == "-")
    }

    static func freshGroupName() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd'T'HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return "campaign-pipeline-replay-\(formatter.string(from: Date()))-\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    }

    static func report(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The rate of the last seconds of a replay, from samples of how much is done: a rate since the start would stay
/// high for minutes while nothing moves (a broker gone), and its ETA would keep counting down.
struct RecentRate {
    /// How far back the rate looks.
    static let window: Double = 10
    /// (seconds since the start, records done), oldest first, the oldest at most one window before the newest.
    private var samples: [(seconds: Double, done: Int64)] = []
    /// When `done` last changed.
    private var lastChange: (seconds: Double, done: Int64)?

    /// Adds a sample.
    mutating func add(seconds: Double, done: Int64) {
        samples.append((seconds, done))
        while samples.count > 2, samples[1].seconds <= seconds - Self.window { samples.removeFirst() }
        if lastChange?.done != done { lastChange = (seconds, done) }
    }

    /// Records per second over the window; `nil` before two samples a moment apart.
    var rate: Double? {
        guard let first = samples.first, let last = samples.last, last.seconds - first.seconds >= 0.5 else { return nil }
        return Double(max(0, last.done - first.done)) / (last.seconds - first.seconds)
    }

    /// Estimated seconds until `total` is done at the recent rate; `nil` without a rate, or while nothing moves.
    func remainingSeconds(toReach total: Int64) -> Double? {
        guard stalledSeconds() == nil, let rate, rate > 0, let last = samples.last, last.done < total else { return nil }
        return Double(total - last.done) / rate
    }

    /// Seconds since `done` last changed, when that is at least `threshold`.
    func stalledSeconds(threshold: Double = 10) -> Double? {
        guard let lastChange, let last = samples.last, last.seconds - lastChange.seconds >= threshold else { return nil }
        return last.seconds - lastChange.seconds
    }
}

/// Shows a replay's progress: redrawn in place on a terminal, a plain line every few seconds otherwise. The rate is
/// that of the last ten seconds (``RecentRate``), and a replay where nothing moved for ten seconds says so instead
/// of an ETA.
final class ProgressDisplay: Sendable {
    private struct State {
        var linesDrawn = 0
        var lastPlainLine = ContinuousClock.now - .seconds(60)
        var recent = RecentRate()
    }

    private let isTerminal: Bool
    private let state = Mutex(State())

    init(isTerminal: Bool) {
        self.isTerminal = isTerminal
    }

    func show(_ progress: ReplayProgress) {
        let (rate, remaining, stalled) = state.withLock { state in
            state.recent.add(seconds: progress.elapsedSeconds, done: progress.done)
            return (state.recent.rate, state.recent.remainingSeconds(toReach: progress.total), state.recent.stalledSeconds())
        }
        var total = Self.line("total", done: progress.done, of: progress.total, rate: rate, remaining: remaining)
        if let stalled {
            total += Self.stalledNote(seconds: stalled, notDone: progress.partitions.filter { $0.done < $0.total }.map(\.partition.partition))
        }
        if isTerminal {
            var text = state.withLock { state in
                defer { state.linesDrawn = progress.partitions.count + 1 }
                return state.linesDrawn > 0 ? "\u{1B}[\(state.linesDrawn)A" : ""
            }
            for partition in progress.partitions {
                text += "\u{1B}[2K" + Self.line("partition \(partition.partition.partition)", done: partition.done, of: partition.total, rate: nil, remaining: nil) + "\n"
            }
            text += "\u{1B}[2K" + total + "\n"
            FileHandle.standardOutput.write(Data(text.utf8))
        } else {
            let due = state.withLock { state in
                guard ContinuousClock.now - state.lastPlainLine >= .seconds(5) || progress.done == progress.total else { return false }
                state.lastPlainLine = .now
                return true
            }
            if due { FileHandle.standardOutput.write(Data(("progress: " + total + "\n").utf8)) }
        }
    }

    /// What the progress line adds when nothing moved for `seconds`: how long, and the partitions not done yet (a
    /// broker that stopped answering, or outputs not acknowledged, shows in the log only once librdkafka gives up on a
    /// request, which can take a minute).
    static func stalledNote(seconds: Double, notDone: [Int32]) -> String {
        let waiting = notDone.map(String.init)
        let shown = waiting.count > 8 ? waiting.prefix(8).joined(separator: ", ") + " and \(waiting.count - 8) more" : waiting.joined(separator: ", ")
        let partitions = waiting.isEmpty ? "" : "; partition\(waiting.count == 1 ? "" : "s") \(shown) not done"
        return String(format: "  no progress for %.0f s", seconds) + partitions
    }

    private static func line(_ label: String, done: Int64, of total: Int64, rate: Double?, remaining: Double?) -> String {
        let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
        var text = "\(label.padding(toLength: 14, withPad: " ", startingAt: 0)) \(done)/\(total) (\(String(format: "%.1f", percent)) %)"
        if let rate { text += String(format: "  %.0f/s", rate) }
        if let remaining { text += String(format: "  ETA %.0f s", remaining) }
        return text
    }
}

import Synchronization
