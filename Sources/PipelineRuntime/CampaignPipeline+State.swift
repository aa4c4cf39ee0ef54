import KafkaClient
import Logging
import PipelineCore
import Synchronization

extension CampaignPipeline {
    /// Folds the campaign definitions and the pending timers from the beginning of their topics, up to their end
    /// offsets at start-up, before any send is processed.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the fold ends (a stop while starting): what was
    ///   folded is then not all there is.
    func foldState(
        from consumer: KafkaConsumer,
        partitions: (definitions: Int32, timers: Int32),
        followers: StateFollowers
    ) async throws {
        let topics = configuration.topics
        if keepsDecisionTimes { await learnCommittedOffsets(sendsPartitionCount: partitions.timers) }
        let all =
            (0..<partitions.definitions).map { KafkaTopicPartition(topic: topics.definitions, partition: $0) }
            + (0..<partitions.timers).map { KafkaTopicPartition(topic: topics.timers, partition: $0) }
        var ranges: [KafkaTopicPartition: Range<Int64>] = [:]
        for partition in all {
            let marks = try await consumer.watermarks(topic: partition.topic, partition: partition.partition)
            if marks.high > marks.low { ranges[partition] = marks.low..<marks.high }
        }
        try consumer.assign(all.map { KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: KafkaOffset.beginning) })
        let progress = StateLoad(ranges: ranges)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = consumer.messages.makeAsyncIterator()
                // Checked at each batch: the stream hands over what it holds before it looks at cancellation, and
                // with a backlog it always holds a batch.
                while !progress.isDone, !Task.isCancelled, let batch = try await iterator.nextBatch() {
                    for message in batch {
                        self.applyState(message, followers: followers)
                        progress.read(message)
                    }
                }
            }
            group.addTask { try await progress.readThroughUnreadableEnds(using: consumer, logger: self.logger) }
            // Whichever ends first ends both: all read, or the rest found to hold nothing readable.
            try await group.next()
            group.cancelAll()
        }
        try Task.checkCancellation()
        logger.info(
            "Campaign state loaded",
            metadata: ["campaigns": "\(campaigns.withLock { $0.count })", "pendingTimers": "\(timers.count)"]
        )
    }

    /// Notes the group's committed offsets of the sends topic in the decision times, before the timers topic is
    /// folded: the ranges before them are then not kept, so that a long history of records on the topic (compaction
    /// keeps a partition's last record only once its segment is closed) folds in time and memory linear in it.
    private func learnCommittedOffsets(sendsPartitionCount count: Int32) async {
        do throws(KafkaError) {
            // In the group, subscribed to nothing: it only asks.
            let member = try KafkaConsumer(
                configuration: configuration.consumerConfiguration(groupID: configuration.groupID, role: .committedOffsets),
                logger: KafkaClientRole.committedOffsets.logger(logger)
            )
            await decisionTimes.trim(committedOf: configuration.topics.sends, askingThrough: member, also: 0..<count)
            await member.close()
        } catch {
            logger.warning("Could not ask the group's committed offsets before reading the timers topic", metadata: ["error": "\(error)"])
        }
    }

    /// Keeps folding new definitions and timer records while the pipeline runs; `sender` writes a timer record again
    /// when a tombstone this pipeline wrote landed after it (``TimerBook/remove(messageId:retiring:writtenHere:at:)``).
    func keepFoldingState(from consumer: KafkaConsumer, followers: StateFollowers, sender: OutputSender) async {
        do {
            var iterator = consumer.messages.makeAsyncIterator()
            while let batch = try await iterator.nextBatch() {
                for message in batch { applyState(message, followers: followers, sender: sender) }
            }
        } catch {
            logger.error("Reading campaign state failed; the campaign table stops changing", metadata: ["error": "\(error)"])
        }
    }

    /// Folds one record of a state topic. `sender` (`nil` during the start-up fold, when nothing has fired here yet)
    /// writes again a newer timer that a tombstone of this pipeline's landed after.
    private func applyState(_ message: KafkaConsumerMessage, followers: StateFollowers, sender: OutputSender? = nil) {
        defer {
            if message.topic == followers.definitions.topic {
                followers.definitions.folded(partition: message.partition, offset: message.offset)
            } else if let timersFollower = followers.timers, message.topic == timersFollower.topic {
                timersFollower.folded(partition: message.partition, offset: message.offset)
            }
        }
        if message.topic == configuration.topics.timers {
            let writtenHere = message.headers.contains(timerRecordHeaders[0])
            if message.key == DecisionTimes.recordKey {
                if let ranges = DecisionTimes.decode(message.value ?? []) {
                    decisionTimes.merge(ranges, of: message.partition, writtenHere: writtenHere)
                } else if !(message.value ?? []).isEmpty {
                    unreadableTimerWarning.log(
                        to: logger,
                        metadata: ["topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)"]
                    )
                }
                return
            }
            guard let value = message.value, !value.isEmpty else {
                let messageId = String(decoding: message.key ?? [], as: UTF8.self)
                // The tombstone retires only the timer it names: a newer one of the message, whose record it may have
                // landed after (the event was delivered again as its first timer fired), stays, and is written again
                // after it when this pipeline wrote the tombstone, so that compaction keeps it.
                let newer = timers.remove(
                    messageId: messageId,
                    retiring: TimerBook.retiredDueTime(of: message.headers),
                    writtenHere: writtenHere
                )
                if let newer, let sender {
                    sender.sendNow(OutputSender.Output(record: timerRecord(newer)) { _ in })
                }
                return
            }
            // Written by this pipeline, which scheduled it when it wrote it.
            if writtenHere { return }
            if let timer = TimerBook.decode(value, partition: message.partition) {
                timers.schedule(timer)
            } else {
                unreadableTimerWarning.log(
                    to: logger,
                    metadata: ["topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)"]
                )
            }
            return
        }
        do throws(PipelineError) {
            try campaigns.withLock { table throws(PipelineError) in try table.apply(json: message.value ?? [], partition: message.partition, offset: message.offset) }
        } catch {
            ignoredCampaignEventWarning.log(
                to: logger,
                metadata: [
                    "topic": "\(message.topic)",
                    "partition": "\(message.partition)",
                    "offset": "\(message.offset)",
                    "reason": "\(error.issues.map(\.description).joined(separator: "; "))",
                ]
            )
        }
    }

    /// Emits `push.expired` (cause `timer`) when a delivered timer notification's countdown ends, for the timers
    /// of the partitions this instance owns, then tombstones the timer record. A partition newly assigned fires once
    /// `follower` (of the timers topic) has read its timers partition to the end: the tombstones its previous owner
    /// wrote before the rebalance are then known (``TimerFiring``). Each partition is caught up on its own, beside the
    /// firing: one the broker cannot tell the end of (no leader, up to the follower's timeout) holds back no other.
    func fireTimers(consumer: KafkaConsumer, sender: OutputSender, follower: StateTopicFollower) async {
        let topics = configuration.topics
        @Sendable func assigned() -> [Int32: Int] {
            var assigned: [Int32: Int] = [:]
            for partition in consumer.assignment where partition.topic == topics.sends {
                assigned[partition.partition] = consumer.assignmentGeneration(of: partition)
            }
            return assigned
        }
        let firing = timerFiring
        let timers = self.timers
        let logger = self.logger
        await withDiscardingTaskGroup { catchUps in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                for (partition, generation) in firing.startCatchUp(among: assigned()) {
                    catchUps.addTask {
                        // Not read to its end in time (logged by the follower): fired all the same, rather than never.
                        if case .cancelled = await follower.catchUpEach(partitions: [partition], logger: logger).outcome { return }
                        firing.markReady(partition, generation: generation)
                    }
                }
                for (timer, generation) in firing.takeDue(assigned: assigned, { timers.takeDue(at: .now(), in: $0) }) {
                    let expired = AnalyticsEvent(kind: .expired, identity: timer.identity, occurredAt: .now(), cause: .timer)
                    let tombstone = TimerBook.tombstone(of: timer, topic: topics.timers, writer: timerRecordHeaders)
                    let record = analyticsRecord(expired)
                    // The tombstone only once the expiry is written: until then, a restart fires the timer again.
                    sender.sendNow(
                        OutputSender.Output(record: record) { [statistics] _ in
                            statistics.recordOutcome(kind: .expired, cause: .timer, bytes: record.value ?? [], isTimerExpiry: true)
                            sender.sendNow(OutputSender.Output(record: tombstone) { _ in firing.tombstoned(timer.partition, generation: generation) })
                        }
                    )
                }
            }
            catchUps.cancelAll()
        }
    }

    /// The record of a pending timer on the timers topic, with this pipeline's `writer` header.
    func timerRecord(_ timer: TimerBook.PendingTimer) -> KafkaProducerRecord {
        TimerBook.record(of: timer, topic: configuration.topics.timers, writer: timerRecordHeaders)
    }

    /// Stops the pipeline once every assigned partition has been read to its end, with nothing in flight, for
    /// `idle` without interruption.
    func stopWhenIdle(for idle: Duration, consumer: KafkaConsumer, sender: OutputSender) async {
        var idleSince: ContinuousClock.Instant?
        var unreadable = UnreadableEnds()
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            if await isIdle(consumer: consumer, sender: sender, unreadable: &unreadable) {
                let since = idleSince ?? .now
                idleSince = since
                if ContinuousClock.now - since >= idle {
                    logger.info("Idle; stopping", metadata: ["idleFor": "\(idle)"])
                    stop()
                    return
                }
            } else {
                idleSince = nil
            }
        }
    }

    /// Whether every assigned sends partition has been read to its end with nothing in flight. A partition whose
    /// position stays short of the high watermark is asked, now and then (`unreadable`), whether anything readable
    /// is left: a topic written by transactional producers ends in a transaction marker, which no consumer is given.
    private func isIdle(consumer: KafkaConsumer, sender: OutputSender, unreadable: inout UnreadableEnds) async -> Bool {
        let assigned = consumer.assignment.filter { $0.topic == configuration.topics.sends }
        let inFlight = totalInFlight()
        guard !assigned.isEmpty, inFlight == 0, sender.pendingRetries == 0 else {
            let detail = progress.withLock { $0.map { "\($0.key.partition):\($0.value.inFlight)@\($0.value.completedPosition ?? -1)" }.sorted().joined(separator: " ") }
            logger.debug("Not idle", metadata: ["assigned": "\(assigned.count)", "inFlight": "\(inFlight)", "retrying": "\(sender.pendingRetries)", "partitions": "\(detail)"])
            return false
        }
        let read = readPositions.withLock { $0 }
        guard let positions = try? await sendsPositions(of: Array(assigned), known: read, consumer: consumer, timeout: .seconds(10)) else { return false }
        for partition in assigned {
            guard let marks = try? await consumer.watermarks(topic: partition.topic, partition: partition.partition) else {
                return false
            }
            let position = positions.position(of: partition, marks: marks)
            if position < marks.high,
                await !hasNothingReadable(from: position, before: marks.high, in: partition, consumer: consumer, unreadable: &unreadable)
            {
                logger.debug("Not idle", metadata: ["partition": "\(partition)", "position": "\(position)", "high": "\(marks.high)"])
                return false
            }
        }
        return true
    }

    /// Where each partition of the sends topic is at: the positions `known` (this instance's own, such as the position
    /// after the last record it read), and for the others where the group committed them (one look-up for all), else
    /// where `auto.offset.reset` starts them.
    struct SendsPositions {
        var known: [KafkaTopicPartition: Int64]
        /// Whether a partition with no commit is read from its end.
        var startsAtEnd: Bool

        /// `partition`'s position, its watermarks `marks` deciding one with no commit.
        func position(of partition: KafkaTopicPartition, marks: KafkaWatermarks) -> Int64 {
            known[partition] ?? (startsAtEnd ? marks.high : marks.low)
        }
    }

    /// The ``SendsPositions`` of `partitions`, those not in `known` looked up in the group's commits within `timeout`.
    func sendsPositions(
        of partitions: [KafkaTopicPartition],
        known: [KafkaTopicPartition: Int64],
        consumer: KafkaConsumer,
        timeout: Duration
    ) async throws(KafkaError) -> SendsPositions {
        var known = known
        let unread = partitions.filter { known[$0] == nil }
        if !unread.isEmpty {
            for committed in try await consumer.committed(unread, timeout: timeout) where committed.offset >= 0 {
                known[committed.topicPartition] = committed.offset
            }
        }
        return SendsPositions(known: known, startsAtEnd: configuration.consumerConfiguration(groupID: configuration.groupID).startsAtEndWithoutCommit)
    }

    /// Whether `partition` holds nothing this consumer can read from `position` before `end`: only transaction
    /// markers or aborted records (``KafkaConsumer/remainder(from:before:in:timeout:)``), asked once the position
    /// stayed put for a while, and remembered until the position or the end moves.
    private func hasNothingReadable(
        from position: Int64,
        before end: Int64,
        in partition: KafkaTopicPartition,
        consumer: KafkaConsumer,
        unreadable: inout UnreadableEnds
    ) async -> Bool {
        if unreadable.readThrough[partition] == position..<end { return true }
        guard unreadable.stalls.isDue(partition, at: position, now: .now) else { return false }
        do {
            if try await consumer.remainder(from: position, before: end, in: partition, timeout: .seconds(5)) == .nothingReadable {
                unreadable.readThrough[partition] = position..<end
                return true
            }
        } catch {
            logger.debug("Could not look for the partition's next record", metadata: ["partition": "\(partition)", "error": "\(error)"])
        }
        unreadable.stalls.checkLater(partition, now: .now)
        return false
    }

    /// What ``stopWhenIdle(for:consumer:sender:)`` knows of the partitions that stay short of their high watermark.
    struct UnreadableEnds {
        /// When each is next asked what is left to read.
        var stalls = PartitionStalls(firstWait: .seconds(1))
        /// The offsets found to hold nothing readable, by partition.
        var readThrough: [KafkaTopicPartition: Range<Int64>] = [:]
    }
}
