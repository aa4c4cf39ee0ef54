import Foundation
import KafkaClient
import Logging
import Synchronization

extension CampaignPipeline {
    /// Assigns each replayed partition at the start of its range, or after the offset the replay's group
    /// committed before in this range (an interrupted replay resumes where it stopped).
    ///
    /// - Throws: ``ReplayGroupConflict`` when the group has commits that are not progress in this replay's range.
    func assignReplayRanges(_ plan: ReplayPlan, consumer: KafkaConsumer) async throws {
        let partitions = plan.ranges.keys.sorted { $0.partition < $1.partition }
        let committed = plan.isDryRun ? [] : try await consumer.committedWithMetadata(partitions)
        let starts = try plan.starts(after: committed, group: configuration.groupID)
        // What is committed already is not committed again.
        replayCommits.withLock { commits in
            for previous in committed where previous.position.offset >= 0 {
                if let start = starts[previous.position.topicPartition], start == previous.position.offset {
                    commits.committed[previous.position.topicPartition] = start
                }
            }
        }
        var resumed = 0
        var doneBeforeStart: Int64 = 0
        var positions: [KafkaTopicPartitionOffset] = []
        for partition in partitions {
            guard let range = plan.ranges[partition], let start = starts[partition] else { continue }
            if start > range.lowerBound { resumed += 1 }
            // Records before the start count as done for progress and the end check.
            readPositions.withLock { $0[partition] = start }
            // Records the replay was to read before the start (retention moved the range's start past them).
            if let before = plan.offsetsBeforeStart(of: partition, after: committed) {
                noteJump(from: before.lowerBound, to: before.upperBound, in: partition)
            }
            doneBeforeStart += start - range.lowerBound
            positions.append(KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: start))
        }
        replayDoneBeforeStart.store(doneBeforeStart, ordering: .relaxed)
        try consumer.assign(positions)
        logger.info(
            "Replay assigned",
            metadata: [
                "partitions": "\(positions.map(\.description).joined(separator: ","))",
                "records": "\(plan.totalCount)",
                "resumedPartitions": "\(resumed)",
                "dryRun": "\(plan.isDryRun)",
            ]
        )
    }

    /// The replay's progress now.
    func replayProgress(_ plan: ReplayPlan, since start: ContinuousClock.Instant) -> ReplayProgress {
        let positions = readPositions.withLock { $0 }
        let inFlight = progress.withLock { $0.mapValues(\.inFlight) }
        let partitions = plan.ranges.keys.sorted { $0.partition < $1.partition }.map { partition in
            let range = plan.ranges[partition]!
            let position = min(max(positions[partition] ?? range.lowerBound, range.lowerBound), range.upperBound)
            let done = max(0, position - range.lowerBound - Int64(inFlight[partition] ?? 0))
            return ReplayProgress.Partition(partition: partition, done: done, total: Int64(range.count))
        }
        let elapsed = ContinuousClock.now - start
        return ReplayProgress(
            partitions: partitions,
            elapsedSeconds: elapsed.inSeconds,
            doneBeforeStart: replayDoneBeforeStart.load(ordering: .relaxed)
        )
    }

    /// Reports progress and stops once every partition reached its range's end with nothing in flight.
    /// Offsets the reading jumped over are checked against the partitions' first offsets still stored every few
    /// seconds, and all of them before the replay is done (``settleOffsetGaps(consumer:)``).
    func stopWhenReplayed(_ plan: ReplayPlan, consumer: KafkaConsumer) async {
        let start = ContinuousClock.now
        var lastReport = start
        var lastGapCheck = start
        var stalls = PartitionStalls(firstWait: .seconds(1))
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            await readThroughUnreadableEnds(plan, stalls: &stalls, consumer: consumer)
            storeReplayedRangeEnds(plan, consumer: consumer)
            // The positions first: a jump is noted before the position moves past it.
            let positions = readPositions.withLock { $0 }
            let finished = plan.ranges.allSatisfy { partition, range in (positions[partition] ?? range.lowerBound) >= range.upperBound }
            if finished || ContinuousClock.now - lastGapCheck >= .seconds(5) {
                lastGapCheck = .now
                await settleOffsetGaps(consumer: consumer)
            }
            let isDone = finished && totalInFlight() == 0 && offsetGaps.withLock(\.isSettled)
            if isDone || ContinuousClock.now - lastReport >= .seconds(1) {
                lastReport = .now
                progressHandler?(replayProgress(plan, since: start))
            }
            if isDone {
                replayFinished.store(true, ordering: .releasing)
                logger.info(
                    "Replay complete",
                    metadata: ["records": "\(plan.totalCount)", "deletedBeforeRead": "\(offsetGaps.withLock(\.deletedCount))"]
                )
                stop()
                return
            }
        }
    }

    /// Stores (to be committed) the end of each range read to its end with nothing in flight: the range's last
    /// offsets may hold no record (transaction markers, records of aborted transactions), which the position after
    /// its last event stops short of, and a group committed short of the end would count them as left to replay.
    /// Only once every event of the partition's range is done (at least once: nothing is committed past an event not
    /// finished); not in a dry run, which stores nothing.
    func storeReplayedRangeEnds(_ plan: ReplayPlan, consumer: KafkaConsumer) {
        guard writesOutputs else { return }
        // The positions first: an event counted in a position is registered in its tracker before the position moves.
        let positions = readPositions.withLock { $0 }
        let inFlight = progress.withLock { $0.mapValues(\.inFlight) }
        let ends = plan.ranges.compactMap { partition, range -> KafkaTopicPartitionOffset? in
            guard let position = positions[partition], position >= range.upperBound, (inFlight[partition] ?? 0) == 0 else { return nil }
            return KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: range.upperBound)
        }
        store(ends, consumer: consumer)
    }

    /// Commits the replay's progress stored since the last commit (``store(_:consumer:)``), each offset with the
    /// range it is progress in as its metadata (``ReplayPlan/commitMetadata(of:)``): a later run with the group resumes
    /// from it only in the same range. (librdkafka 2.0 stores no metadata with an offset, so a replay commits its
    /// progress itself rather than through the background auto-commit.) `limit` bounds the wait for the coordinator
    /// (``KafkaConsumer/commit(_:within:)``; `nil`: until it answers).
    func commitReplayProgress(_ plan: ReplayPlan, consumer: KafkaConsumer, within limit: Duration? = nil) async throws(KafkaError) {
        let due = replayCommits.withLock { commits in commits.isHalted ? [:] : commits.done.filter { commits.committed[$0.key] != $0.value } }
        let offsets = due.sorted { $0.key.partition < $1.key.partition }.compactMap { partition, offset -> KafkaOffsetAndMetadata? in
            guard let metadata = plan.commitMetadata(of: partition) else { return nil }
            return KafkaOffsetAndMetadata(KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: offset), metadata: metadata.encoded)
        }
        guard !offsets.isEmpty else { return }
        try await consumer.commit(offsets, within: limit)
        replayCommits.withLock { commits in
            for (partition, offset) in due { commits.committed[partition] = max(commits.committed[partition] ?? offset, offset) }
        }
    }

    /// Commits the replay's progress every `interval` until cancelled (a commit under way goes on: the stop waits for
    /// it only until the final commit's turn).
    ///
    /// A wait that lasted far longer than `interval` means the process was stopped or paused (or starved): a lease of
    /// the group (``ReplayLease``) may have been lost meanwhile, which its holder learns only once it runs again, so
    /// that commit waits a round more, for ``stopWithoutCommitting()`` to come first.
    func keepCommittingReplayProgress(_ plan: ReplayPlan, consumer: KafkaConsumer, every interval: Duration) async {
        while !Task.isCancelled {
            let asleep = ContinuousClock.now
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            if ContinuousClock.now - asleep > interval + Self.pauseAllowance {
                replayCommits.withLock { $0.sawPause = true }
                logger.info("The replay's process did not run for \((ContinuousClock.now - asleep).components.seconds) s: its next commit waits a round")
                continue
            }
            do {
                try await commitReplayProgress(plan, consumer: consumer)
            } catch {
                // Committed with the next one, or at the end.
                logger.warning("Replay progress not committed; retried with the next commit", metadata: ["error": "\(error)"])
            }
        }
    }

    /// How much longer than asked a wait between a replay's commits may last before it counts as a pause of the
    /// process (``keepCommittingReplayProgress(_:consumer:every:)``).
    static let pauseAllowance: Duration = .seconds(3)

    /// Marks as read through the partitions whose rest of the range holds no readable record.
    ///
    /// A range ending at the high watermark can end in offsets no consumer is given: transaction markers (a topic
    /// written by transactional producers ends in one after every transaction), records of aborted transactions.
    /// Waiting for a record there would never end the replay, so a partition not finished, with nothing in flight,
    /// whose position stayed put for a while, is asked what is left to read in its range; when nothing readable is
    /// left, its position moves to the range's end. Records a transaction still open holds back are waited for.
    func readThroughUnreadableEnds(_ plan: ReplayPlan, stalls: inout PartitionStalls, consumer: KafkaConsumer) async {
        let positions = readPositions.withLock { $0 }
        let inFlight = progress.withLock { $0.mapValues(\.inFlight) }
        let now = ContinuousClock.now
        for (partition, range) in plan.ranges.sorted(by: { $0.key.partition < $1.key.partition }) {
            guard let position = positions[partition], position < range.upperBound, (inFlight[partition] ?? 0) == 0,
                stalls.isDue(partition, at: position, now: now)
            else { continue }
            do {
                switch try await consumer.remainder(from: position, before: range.upperBound, in: partition, timeout: .seconds(5)) {
                case .nothingReadable:
                    break
                case .record:
                    stalls.checkLater(partition, now: .now)
                    continue
                case .openTransaction(let stable):
                    logger.info(
                        "Replay waits for an open transaction",
                        metadata: ["partition": "\(partition)", "lastStableOffset": "\(stable)", "end": "\(range.upperBound)"]
                    )
                    stalls.checkLater(partition, now: .now)
                    continue
                }
            } catch {
                logger.debug("Could not look for the range's next record", metadata: ["partition": "\(partition)", "error": "\(error)"])
                stalls.checkLater(partition, now: .now)
                continue
            }
            // The jump is noted before the position moves past it (records deleted meanwhile end here too).
            let moved = readPositions.withLock { positions in
                guard let current = positions[partition], current == position else { return false }
                noteJump(from: position, to: range.upperBound, in: partition)
                positions[partition] = range.upperBound
                return true
            }
            guard moved else { continue }
            logger.info(
                "Replay read through a partition",
                metadata: [
                    "partition": "\(partition)",
                    "unreadableOffsets": "\(position)..<\(range.upperBound)",
                    "reason": "no readable record left in the range (transaction markers, aborted records, or records deleted: checked next)",
                ]
            )
        }
    }

    /// What the pipeline does with a record it read: streaming processes every one; a replay only those of its range.
    enum ReadCheck {
        /// Streaming, or a record in its partition's range: processed.
        case process
        /// A record of a partition the replay does not cover: skipped.
        case skip
        /// The first records past the range: skipped, and the partition (now paused) is read up to `end`.
        case pastEnd(Int64)
    }

    /// Whether `message` is processed: always when streaming; for a replay, when it is in its partition's range. A
    /// record past the range pauses the partition. Offsets the reading jumped over since `expected` (the offset after
    /// the partition's last record read in the same reading, or a replay's start), a replay's within its range, are
    /// noted in both, to be checked for records deleted before they were read (``noteJump(from:to:in:)``).
    func checkRead(_ message: KafkaConsumerMessage, after expected: Int64?, consumer: KafkaConsumer) -> ReadCheck {
        guard let replay else {
            noteJump(from: expected, to: message.offset, in: message.topicPartition)
            return .process
        }
        guard let range = replay.ranges[message.topicPartition] else { return .skip }
        noteJump(from: expected, to: min(message.offset, range.upperBound), in: message.topicPartition)
        if message.offset >= range.upperBound {
            consumer.pause([message.topicPartition], generation: message.assignmentGeneration)
            return .pastEnd(range.upperBound)
        }
        return .process
    }
}

/// A replay's progress per partition, committed by the replay itself (``CampaignPipeline/commitReplayProgress(_:consumer:)``).
struct ReplayCommits {
    /// The position up to which every event is done (or the range's end, once read to it with nothing in flight).
    var done: [KafkaTopicPartition: Int64] = [:]
    /// The position last committed (or found committed by the group in this range when the replay started).
    var committed: [KafkaTopicPartition: Int64] = [:]
    /// Nothing more is committed (``CampaignPipeline/stopWithoutCommitting()``).
    var isHalted = false
    /// A wait between commits lasted far longer than asked (``CampaignPipeline/wasPausedDuringReplay``).
    var sawPause = false
}
