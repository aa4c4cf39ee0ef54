import Foundation
import KafkaClient
import Logging
import PipelineCore
import PushSinks
import Synchronization

extension CampaignPipeline {
    /// A batch decided, to be emitted once the records of the instants it was judged at are acknowledged.
    struct DecidedBatch: Sendable {
        let records: [KafkaConsumerMessage]
        /// One per record; `nil` for a record left undecided (the pipeline stopped while it waited).
        var decisions: [EventProcessor.Decision?]
        /// The acknowledgements of the batch's decision times records, when it wrote any.
        let recorded: AcknowledgementCountdown?
    }

    /// Decides a batch (partitions in parallel when the batch is large). In streaming, each record is judged as it was
    /// judged before (read again after a crash or a rebalance: at the same instant, against the campaign table as it
    /// had read the definitions topic then), otherwise now against the table as it is; once decided, the judgements
    /// of the records not judged before are recorded, and ``emit(_:consumer:sender:completion:)`` waits for their
    /// records. `nil` when the pipeline stopped before the judgements of a new reading could be read, or before the
    /// campaign table could read as far as a record's first judging had: nothing of the batch is emitted, so nothing
    /// of it is committed.
    func decide(
        _ batch: [KafkaConsumerMessage],
        consumer: KafkaConsumer,
        decisionsSender: OutputSender?,
        followers: StateFollowers
    ) async -> DecidedBatch? {
        let now = decisionTime()
        // The batch's indices by partition, in read order within each.
        let byPartition = Dictionary(grouping: batch.indices, by: { batch[$0].partition })
        var judged: [DecisionTimes.Judgement?]?
        if let timersFollower = followers.timers, decisionsSender != nil, let now {
            guard await readDecisionTimes(of: batch, consumer: consumer, follower: timersFollower) else { return nil }
            judged = judgements(of: batch, byPartition: byPartition, at: now, consumer: consumer)
        }
        guard let table = await campaignTable(covering: judged ?? [], definitions: followers.definitions) else { return nil }
        let processor = self.processor
        let judgements = judged
        var decisions = [EventProcessor.Decision?](repeating: nil, count: batch.count)
        // Each worker (task) decides its events with one scratch (see `RenderScratch`).
        if batch.count >= 64, byPartition.count > 1 {
            await withTaskGroup(of: [(Int, EventProcessor.Decision)].self) { group in
                for indices in byPartition.values {
                    group.addTask {
                        let scratch = RenderScratch()
                        return indices.map { index in
                            (index, Self.decide(batch, at: index, processor: processor, table: table, judgement: judgements?[index], now: now, scratch: scratch))
                        }
                    }
                }
                for await results in group {
                    for (index, decision) in results { decisions[index] = decision }
                }
            }
        } else {
            let scratch = RenderScratch()
            for index in batch.indices {
                decisions[index] = Self.decide(batch, at: index, processor: processor, table: table, judgement: judgements?[index], now: now, scratch: scratch)
            }
        }
        // The records decided again after a catch-up, with the horizon of the newer table (the others were decided
        // against `table`'s).
        let decidedLater = await decideAgainOnceDefinitionsAreRead(batch, &decisions, now: now, judgements: judgements, definitions: followers.definitions)
        var recorded: AcknowledgementCountdown?
        if let judgements, let decisionsSender {
            let heldAlready: [Int]
            (recorded, heldAlready) = record(
                judgements,
                horizon: { decidedLater[$0] ?? table.horizon },
                of: batch,
                byPartition: byPartition,
                decided: decisions,
                consumer: consumer,
                sender: decisionsSender
            )
            await decideAgainAsRecorded(batch, at: heldAlready, &decisions, definitions: followers.definitions)
        }
        return DecidedBatch(records: batch, decisions: decisions, recorded: recorded)
    }

    /// Decides again the records at `indices`, whose judgement another instance recorded while this one decided them
    /// (a late record of that instance's earlier reading of the partition, folded meanwhile): as recorded, since that
    /// is the judgement on the topic, which a reading after a crash or a rebalance uses, with a table that has read
    /// the definitions topic as far as that judgement's had (``campaignTable(covering:definitions:)``). When the
    /// pipeline stops meanwhile, they are left undecided (not emitted), with every later record of their partitions.
    private func decideAgainAsRecorded(
        _ batch: [KafkaConsumerMessage],
        at indices: [Int],
        _ decisions: inout [EventProcessor.Decision?],
        definitions: StateTopicFollower
    ) async {
        guard !indices.isEmpty else { return }
        let now = Timestamp.now()
        let recorded = indices.map { index in
            decisionTimes.judgements(for: [batch[index].offset], of: batch[index].partition, now: now).first
        }
        guard let table = await campaignTable(covering: recorded, definitions: definitions) else {
            Self.leaveUndecided(from: indices, of: batch, &decisions)
            return
        }
        let scratch = RenderScratch()
        for (index, judgement) in zip(indices, recorded) {
            guard let judgement, judgement.wasJudged else { continue }
            // `now`, this reading's instant: the sinks judge the send as at its recorded instant plus the time since.
            decisions[index] = Self.decide(batch, at: index, processor: processor, table: table, judgement: judgement, now: now, scratch: scratch)
        }
    }

    /// Leaves the records at `indices` undecided, with every later record of their partitions in `batch` (not emitted,
    /// so not committed past: processed again after the restart), when the pipeline stopped before they could be
    /// decided.
    private static func leaveUndecided(from indices: [Int], of batch: [KafkaConsumerMessage], _ decisions: inout [EventProcessor.Decision?]) {
        let undecided = Set(indices)
        var stopped = Set<Int32>()
        for index in batch.indices {
            if undecided.contains(index) { stopped.insert(batch[index].partition) }
            if stopped.contains(batch[index].partition) { decisions[index] = nil }
        }
    }

    /// The campaign table to judge a batch with: one that has read the definitions topic at least as far as the table
    /// each record `judged` before was judged against had (another instance's, or this one's before a restart, may
    /// have read further than this one has yet), so that a record judged again finds every campaign event its first
    /// judging knew. `nil` when the pipeline stops while the table catches up.
    private func campaignTable(covering judged: [DecisionTimes.Judgement?], definitions: StateTopicFollower) async -> CampaignTable? {
        let table = campaigns.withLock { $0 }
        let needed = judged.lazy.compactMap { $0?.horizon }.filter { !table.horizon.covers($0) }.first
        guard let needed else { return table }
        if case .cancelled = await definitions.catchUp(logger: logger) { return nil }
        let caughtUp = campaigns.withLock { $0 }
        if !caughtUp.horizon.covers(needed) {
            tableBehindWarning.log(to: logger, metadata: ["topic": "\(definitions.topic)"])
        }
        return caughtUp
    }

    /// Queues the outputs of a decided batch in read order, once the records of the instants it was judged at are
    /// acknowledged (or ``decisionTimesWait`` passed: logged). A batch whose records are not acknowledged when the
    /// pipeline stops is not emitted: it is read again, and judged at those instants, if they were written.
    ///
    /// - Returns: whether the batch was emitted. One that was not leaves a gap in its partitions' read positions, so
    ///   no later batch may be emitted either: its completed events would move the commit position past the gap.
    func emit(_ decided: consuming DecidedBatch, consumer: KafkaConsumer, sender: OutputSender, completion: EventCompletion) async -> Bool {
        if let recorded = decided.recorded, !(await recorded.wait(atMost: Self.decisionTimesWait)) {
            if Task.isCancelled { return false }
            unwrittenDecisionTimesWarning.log(
                to: logger,
                metadata: [
                    "topic": "\(configuration.topics.timers)",
                    "detail": "a send of this batch read again after a crash or a rebalance can be judged again",
                ]
            )
        }
        let batch = decided.records
        var decisions = decided.decisions
        // Records of partitions revoked meanwhile are left to their new owner.
        let assigned = consumer.assignment
        let routes = activeRoutes.withLock { $0 }
        // The batch's partitions (a few), each looked up in the shared tables once per batch instead of per event:
        // whether it is still assigned, its tracker, and the position after its last record read.
        var cursors: [BatchCursor] = []
        // A replay's position in each partition before this batch, to see where its reading jumps over offsets.
        let positionsBefore = replay == nil ? [:] : readPositions.withLock { $0 }
        // By index, taking each decision out of its array: iterating it copied every decision first. Each record is
        // copied once, for the checks and the asynchronous `emit` together (`batch[index]` in each copied it again).
        for index in batch.indices {
            guard let decision = decisions[index].take() else { continue }
            let message = batch[index]
            let cursor: Int
            if let found = cursors.firstIndex(where: { $0.partition.partition == message.partition && $0.partition.topic == message.topic }) {
                cursor = found
            } else {
                let partition = message.topicPartition
                cursors.append(
                    BatchCursor(
                        partition: partition,
                        isAssigned: assigned.contains(partition),
                        positionBefore: replay == nil ? positionInReading(of: message) : positionsBefore[partition]
                    )
                )
                cursor = cursors.count - 1
            }
            guard cursors[cursor].isAssigned else { continue }
            switch checkRead(message, after: cursors[cursor].nextOffset ?? cursors[cursor].positionBefore, consumer: consumer) {
            case .process:
                break
            case .skip:
                continue
            case .pastEnd(let end):
                // Read up to the range's end (its last records may sit before it, when offsets have gaps).
                cursors[cursor].nextOffset = max(cursors[cursor].nextOffset ?? end, end)
                continue
            }
            // A record of a reading that is over (the partition was revoked, or revoked and given back, since it was
            // read) is left to the partition's next reading, which reads it again from the committed offset.
            guard let tracker = track(message, cursor: &cursors[cursor], consumer: consumer, completion: completion) else { continue }
            let ticket = EventTicket(tracker: tracker, offset: message.offset)
            await emit(decision, for: message, ticket: ticket, routes: routes, consumer: consumer, sender: sender)
        }
        readPositions.withLock { positions in
            for cursor in cursors {
                if let next = cursor.nextOffset { positions[cursor.partition] = next }
            }
        }
        return true
    }

    /// Decides again, once the campaign table has read the definitions topic to its end, the events that named a
    /// campaign definition the table lacked, and returns the new table's horizon for each; those still lacking it are
    /// rejected when emitted. An event judged before against a table that lacked it too (its
    /// `judgements` say so) is not decided again: its first judging did not find it either. When the pipeline
    /// stops meanwhile, nothing can be concluded: those events, and every later one of their partitions in the
    /// batch, are left undecided (not emitted, so not committed past: processed again after the restart).
    private func decideAgainOnceDefinitionsAreRead(
        _ batch: [KafkaConsumerMessage],
        _ decisions: inout [EventProcessor.Decision?],
        now: Timestamp?,
        judgements: [DecisionTimes.Judgement?]?,
        definitions: StateTopicFollower
    ) async -> [Int: CampaignTable.Horizon] {
        let waiting = decisions.indices.filter {
            guard case .awaitingDefinition? = decisions[$0] else { return false }
            guard let judgement = judgements?[$0], judgement.wasJudged else { return true }
            return judgement.horizon == nil
        }
        guard !waiting.isEmpty else { return [:] }
        // Sends written before the table last read the topic to its end have all they will get.
        guard waiting.contains(where: { !definitions.hasCaughtUp(since: batch[$0].timestamp) }) else { return [:] }
        if case .cancelled = await definitions.catchUp(logger: logger) {
            Self.leaveUndecided(from: waiting, of: batch, &decisions)
            return [:]
        }
        let table = campaigns.withLock { $0 }
        let scratch = RenderScratch()
        var horizons: [Int: CampaignTable.Horizon] = [:]
        for index in waiting {
            decisions[index] = Self.decide(batch, at: index, processor: processor, table: table, judgement: judgements?[index], now: now, scratch: scratch)
            horizons[index] = table.horizon
        }
        return horizons
    }

    /// How long a batch's outputs wait for its decision times records before going ahead without them.
    static let decisionTimesWait: Duration = .seconds(5)

    /// Waits, when `batch` holds records of a new reading of a partition (assigned here, or assigned again), until
    /// the partition of the timers topic is folded to its end: the instants its records were judged at before (by
    /// another instance, or before a restart) are then known. This instance's own records of an earlier reading are
    /// waited for first (at most ``decisionTimesWait``), and its sends are then judged at the instants of the records
    /// in the topic's order (``DecisionTimes/adoptLogged(_:)``). `false` when the pipeline stops meanwhile: nothing
    /// of the batch is emitted, so nothing of it is committed.
    private func readDecisionTimes(of batch: [KafkaConsumerMessage], consumer: KafkaConsumer, follower: StateTopicFollower) async -> Bool {
        let read = decisionTimesRead.withLock { $0 }
        var readings: [KafkaTopicPartition: Int] = [:]
        var previous: (partition: Int32, generation: Int)?
        for message in batch where previous?.partition != message.partition || previous?.generation != message.assignmentGeneration {
            previous = (message.partition, message.assignmentGeneration)
            let partition = message.topicPartition
            if read[partition] != message.assignmentGeneration { readings[partition] = message.assignmentGeneration }
        }
        guard !readings.isEmpty else { return true }
        let partitions = Set(readings.keys.map(\.partition))
        // Their records were fenced when an earlier reading was revoked (``fence(revoked:)``).
        decisionTimes.reopen(readings.lazy.filter { consumer.isReading($0.key, generation: $0.value) }.map(\.key.partition))
        let unsettled = await decisionTimes.waitForAcknowledgements(of: partitions, atMost: Self.decisionTimesWait)
        let (outcome, reached) = await follower.catchUpEach(partitions: partitions, logger: logger)
        if case .cancelled = outcome { return false }
        // Where a record of this instance is still on its way, or the partition was not read to its end (gave up,
        // logged), what was read is used and what the instance judged itself is kept: the record could hold an
        // instant this instance would no longer know. (The sends not known are judged now.)
        decisionTimes.adoptLogged(reached.subtracting(unsettled))
        decisionTimesRead.withLock { read in
            for (partition, generation) in readings { read[partition] = max(read[partition] ?? generation, generation) }
        }
        return true
    }

    /// How each record of `batch` (whose indices by partition are `byPartition`) is judged
    /// (``DecisionTimes/judgements(for:of:now:)``); `nil` for the records of partitions not read here now: a record
    /// written for a partition another instance owns would give it instants it never judged at.
    private func judgements(
        of batch: [KafkaConsumerMessage],
        byPartition: [Int32: [Int]],
        at now: Timestamp,
        consumer: KafkaConsumer
    ) -> [DecisionTimes.Judgement?] {
        var judgements = [DecisionTimes.Judgement?](repeating: nil, count: batch.count)
        for (partition, indices) in byPartition {
            let first = batch[indices[0]]
            guard consumer.isReading(first.topicPartition, generation: first.assignmentGeneration) else { continue }
            let judged = decisionTimes.judgements(for: indices.map { batch[$0].offset }, of: partition, now: now)
            for (index, judgement) in zip(indices, judged) { judgements[index] = judgement }
        }
        return judgements
    }

    /// Records the judgements of the decided records of `batch` not judged before, each with the horizon of the table
    /// it was decided against (``DecisionTimes/record(_:of:)``), and sends the records of the partitions whose
    /// decision times changed: their acknowledgements, to wait for before the outputs, and the indices of the records
    /// a range held already (``DecisionTimes/record(_:of:)``). Records left undecided (the pipeline stopped) are not
    /// recorded: they are judged anew when read again.
    private func record(
        _ judgements: [DecisionTimes.Judgement?],
        horizon: (Int) -> CampaignTable.Horizon,
        of batch: [KafkaConsumerMessage],
        byPartition: [Int32: [Int]],
        decided decisions: [EventProcessor.Decision?],
        consumer: KafkaConsumer,
        sender: OutputSender
    ) -> (AcknowledgementCountdown?, heldAlready: [Int]) {
        var changed: [Int32] = []
        var heldAlready: [Int] = []
        for (partition, indices) in byPartition.sorted(by: { $0.key < $1.key }) {
            // Revoked while the batch was decided: its outputs are not emitted here.
            let first = batch[indices[0]]
            guard consumer.isReading(first.topicPartition, generation: first.assignmentGeneration) else { continue }
            let newIndices = indices.filter { index in
                guard let judgement = judgements[index], !judgement.wasJudged else { return false }
                return decisions[index] != nil
            }
            guard !newIndices.isEmpty else { continue }
            let new = newIndices.map { index in (offset: batch[index].offset, decidedAt: judgements[index]!.decidedAt, horizon: horizon(index)) }
            let (didChange, held) = decisionTimes.record(new, of: partition)
            if didChange { changed.append(partition) }
            if !held.isEmpty {
                let offsets = Set(held)
                heldAlready += newIndices.filter { offsets.contains(batch[$0].offset) }
            }
        }
        guard !changed.isEmpty else { return (nil, heldAlready) }
        // A partition whose record has not landed for longer than the wait (no leader) is not waited for.
        let awaited = changed.filter { !decisionTimes.isLagging($0, by: Self.decisionTimesWait) }
        let countdown = AcknowledgementCountdown(count: awaited.count)
        for partition in changed where decisionTimes.recordNeeded(for: partition, acknowledging: awaited.contains(partition) ? countdown : nil) {
            sendDecisionTimesRecord(of: partition, sender: sender)
        }
        return (countdown, heldAlready)
    }

    /// Runs on the consumer's poll thread when partitions are about to be revoked
    /// (``KafkaConsumerConfiguration/willRevokePartitions``; the group's rebalance waits for it), for those of the sends
    /// topic, within ``decisionTimesWait`` in all:
    /// - no change of their decision times is recorded from now on, and their records in flight (with the newer one
    ///   holding the changes made before) are waited for, so that they land before the partitions' next owner reads
    ///   the timers topic to its end (``DecisionTimes/close(_:waitingAtMost:)``; a record landing after that would
    ///   give later readers instants the next owner did not judge at);
    /// - their timers fire no more here, and the tombstones of their expiries in flight are waited for, so that the
    ///   next owner, which reads the timers partition to its end before it fires, does not fire them again
    ///   (``TimerFiring/fence(_:until:)``).
    func fence(revoked partitions: Set<KafkaTopicPartition>) {
        let revoked = Set(partitions.lazy.filter { $0.topic == self.configuration.topics.sends }.map(\.partition))
        guard !revoked.isEmpty else { return }
        let deadline = ContinuousClock.now + Self.decisionTimesWait
        if keepsDecisionTimes {
            let unlanded = decisionTimes.close(revoked, waitingAtMost: Self.decisionTimesWait)
            if !unlanded.isEmpty {
                logger.warning(
                    "Decision times of revoked partitions not acknowledged; their next owner may judge some of their sends at other instants",
                    metadata: [
                        "topic": "\(configuration.topics.timers)",
                        "partitions": "\(unlanded.sorted().map(String.init).joined(separator: ","))",
                    ]
                )
            }
        }
        let unfired = timerFiring.fence(revoked, until: deadline)
        if !unfired.isEmpty {
            logger.warning(
                "Timer expiries of revoked partitions not tombstoned; their next owner may fire them again",
                metadata: [
                    "topic": "\(configuration.topics.timers)",
                    "partitions": "\(unfired.sorted().map(String.init).joined(separator: ","))",
                ]
            )
        }
    }

    /// Sends the record of `partition`'s decision times, and the next one when the ranges changed while it was in
    /// flight (``DecisionTimes/recordLanded(_:now:)``). Never waits: it also runs in a delivery callback.
    private func sendDecisionTimesRecord(of partition: Int32, sender: OutputSender) {
        let record = decisionTimes.record(of: partition, topic: configuration.topics.timers, writer: timerRecordHeaders)
        sender.sendNow(
            OutputSender.Output(record: record) { [self] _ in
                if decisionTimes.recordLanded(partition) { sendDecisionTimesRecord(of: partition, sender: sender) }
            }
        )
    }

    /// Every second, drops the decision times the group committed past (``DecisionTimes/trim(committedOf:askingThrough:)``).
    func keepTrimmingDecisionTimes(of consumer: KafkaConsumer) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            await decisionTimes.trim(committedOf: configuration.topics.sends, askingThrough: consumer)
        }
    }

    /// One partition of a batch being emitted.
    private struct BatchCursor {
        let partition: KafkaTopicPartition
        let isAssigned: Bool
        /// The position in the partition before the batch, to see where the reading jumps over offsets: a replay's
        /// (``readPositions``), or the offset after the last event registered in the reading the batch's first record
        /// of the partition belongs to (``positionInReading(of:)``).
        let positionBefore: Int64?
        /// The tracker the partition's last event was registered in.
        var tracker: PartitionProgress?
        /// The offset after the last event registered, or a replay's range end once reached (for ``readPositions``,
        /// once the batch is done).
        var nextOffset: Int64?
    }

    /// The offset after the last event registered in the reading `message` belongs to (its partition's tracker of the
    /// same assignment generation); `nil` when it is the reading's first.
    private func positionInReading(of message: KafkaConsumerMessage) -> Int64? {
        guard let tracker = progress.withLock({ $0[message.topicPartition] }), tracker.generation == message.assignmentGeneration else { return nil }
        return tracker.nextOffset
    }

    /// Registers `message` in its partition's tracker: the one the batch's previous event of the partition went to
    /// when it is still current (same assignment generation, not retired, and the offset comes after), otherwise
    /// the partition's tracker in ``progress`` (see ``beginTracking(_:offset:generation:consumer:completion:)``);
    /// `nil` when the record belongs to a reading of the partition that is over.
    private func track(
        _ message: KafkaConsumerMessage,
        cursor: inout BatchCursor,
        consumer: KafkaConsumer,
        completion: EventCompletion
    ) -> PartitionProgress? {
        // The generation the record was read under, not the partition's now: records a batch still holds from before
        // the partition was revoked and given back must not join the new reading's tracker, which would then commit
        // past events of the old reading that never finished.
        let generation = message.assignmentGeneration
        if let current = cursor.tracker, current.generation == generation, current.begin(offset: message.offset) {
            cursor.nextOffset = message.offset + 1
            return current
        }
        guard let tracker = beginTracking(cursor.partition, offset: message.offset, generation: generation, consumer: consumer, completion: completion) else {
            return nil
        }
        cursor.tracker = tracker
        cursor.nextOffset = message.offset + 1
        return tracker
    }

    /// Decides the record at `index` of `batch`. The batch and an index, not the record: only the fields used are
    /// read out of the array, where passing `batch[index]` copied the whole record (a reference count for each of
    /// its topic, key, value and headers, on memory another thread wrote). A record judged before (`judgement`) is
    /// judged as then: at its instant, against `table` as it had read the definitions topic; any other at `now`
    /// against `table`.
    private static func decide(
        _ batch: [KafkaConsumerMessage],
        at index: Int,
        processor: EventProcessor,
        table: CampaignTable,
        judgement: DecisionTimes.Judgement?,
        now: Timestamp?,
        scratch: RenderScratch
    ) -> EventProcessor.Decision {
        let decision = processor.process(
            batch[index].value ?? [],
            sourcePosition: "\(batch[index].topic)/\(batch[index].partition)@\(batch[index].offset)",
            campaigns: judgement?.wasJudged == true ? table.reading(through: judgement?.horizon) : table,
            decisionTime: judgement?.decidedAt ?? now,
            scratch: scratch
        )
        // A send judged at an earlier reading's instant is judged so by the sinks too: one the first reading
        // delivered is not expired by the sink the next time (found by review).
        guard let judgement, judgement.wasJudged, let now, case .deliver(var notification, let timer) = decision,
            notification.request.expiresAt != nil, judgement.decidedAt < now
        else { return decision }
        notification.judgedEarlierBy = now.duration(since: judgement.decidedAt)
        return .deliver(notification, timer: timer)
    }

    /// The tracker of a partition with the event at `offset` registered in it. A partition assigned again, or
    /// rewound (read again from an earlier offset), gets a new tracker, so late acknowledgements of the old reading
    /// can never complete events of the new one. A new tracker reports its advances to `completion`. `nil` when
    /// the partition is no longer read under `generation`.
    func beginTracking(
        _ partition: KafkaTopicPartition,
        offset: Int64,
        generation: Int,
        consumer: KafkaConsumer,
        completion: EventCompletion
    ) -> PartitionProgress? {
        progress.withLock { progress in
            if let existing = progress[partition], existing.generation == generation, existing.begin(offset: offset) {
                return existing
            }
            // Checked under the lock that the revocation's clean-up takes after the consumer changed its assignment:
            // a tracker made here is either for the current reading or seen and retired by that clean-up.
            guard consumer.isReading(partition, generation: generation) else { return nil }
            if let retired = progress[partition] {
                retired.retire()
                // Rewound within the same reading (an offset reset): a pause the retired tracker asked for, maybe not
                // applied yet, would hold the partition back for good, as the new tracker never paused it (found by
                // review). Consumer commands run in call order, so this resume comes after that pause.
                if retired.generation == generation, retired.isPaused { consumer.resume([partition], generation: generation) }
            }
            let created = PartitionProgress(partition: partition, generation: generation, completion: completion)
            _ = created.begin(offset: offset)
            progress[partition] = created
            return created
        }
    }

    /// Queues the outputs of one decision, whose event is registered in its ticket's tracker, and accounts for them.
    private func emit(
        _ decision: EventProcessor.Decision,
        for message: KafkaConsumerMessage,
        ticket: EventTicket,
        routes: ActiveRoutes,
        consumer: KafkaConsumer,
        sender: OutputSender
    ) async {
        let tracker = ticket.tracker
        guard writesOutputs else {
            countWithoutWriting(decision, source: message)
            ticket.finishUnit()
            return
        }

        switch decision {
        case .deliver(let notification, let timer):
            let warned = !notification.warnings.isEmpty
            statistics.recordInput(template: notification.templateID, platform: notification.platform, warned: warned, payload: notification.payloadBytes)
            if warned { logWarnings(of: notification, source: message) }
            // The contract keys sends by recipient id, so that one recipient's stay in order (found by review: a
            // producer keying otherwise, or not at all, went unnoticed).
            if message.key?.elementsEqual(notification.recipientId.utf8) != true {
                sendKeyWarning.log(
                    to: logger,
                    metadata: [
                        "eventId": "\(notification.request.eventId)",
                        "recipientId": "\(notification.recipientId)",
                        "key": "\(message.key.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? "none")",
                        "topic": "\(message.topic)",
                        "partition": "\(message.partition)",
                    ]
                )
            }
            let route = routes[notification.platform]
            let sinks = route.sinks
            // What the outcome needs, without the payload or the source record: the notification itself is let go
            // once the sinks have it, and the record (its value, key and headers) is not kept while in flight.
            let delivery = SinkDelivery(
                notification,
                source: message,
                sinkNames: route.names,
                timer: timer,
                ticket: ticket,
                sinkCount: sinks.count
            )
            // One unit for the delivery as a whole: done when every sink has answered and the outcome is queued.
            ticket.add(1)
            if sinks.isEmpty {
                // Only possible with a configuration built in code (loaded ones always route both platforms).
                let failure = SinkFailure(.rejectedByPlatform, "no sink is configured for \(notification.platform.rawValue) payloads")
                finishDelivery(delivery, outcome: .failed(failure), from: "none", sender: sender)
            }
            for (sink, countsWaits) in zip(sinks, route.countsWaits) {
                let sinkName = sink.name
                if countsWaits { tracker.wait(on: sinkName, 1) }
                await sink.submit(notification, isCancelled: tracker.isRetiredCheck) { [self] outcome in
                    if countsWaits { delivery.ticket.tracker.wait(on: sinkName, -1) }
                    guard let (outcome, sinkName) = delivery.answer(outcome, from: sinkName) else { return }
                    self.finishDelivery(delivery, outcome: outcome, from: sinkName, sender: sender)
                }
            }

        case .rejected(let identity, let error), .awaitingDefinition(let identity, let error):
            recordInput(of: identity)
            let detail = AnalyticsEvent.boundedDetail(error.issues.map(\.description).joined(separator: "; "))
            rejectedEventWarning.log(
                to: logger,
                metadata: {
                    var metadata: Logger.Metadata = [
                        "eventId": "\(identity.eventId ?? "-")",
                        // As written when it is not registered: cut, as a record key is.
                        "template": "\(identity.template.map { String($0.prefix(200)) } ?? "-")",
                        "topic": "\(message.topic)",
                        "partition": "\(message.partition)",
                        "offset": "\(message.offset)",
                        "reason": "\(error.code): \(detail)",
                    ]
                    // Only in the log: often why the event failed (a misspelt key beside a required field missing).
                    if !error.warnings.isEmpty {
                        metadata["warnings"] = "\(Self.logged(error.warnings))"
                    }
                    return metadata
                }()
            )
            let rejected = AnalyticsEvent(
                kind: .rejected,
                identity: identity,
                occurredAt: .now(),
                reasonCode: error.code.rawValue,
                reasonDetail: detail
            )
            // The original's headers, but for any of the names added here: they replace it (a dead letter sent to the
            // sends topic again comes back with this rejection's, not the last one's beside it; found by review: a
            // reader taking the first `error.code` got the original's).
            var headers = message.headers
            headers.removeAll { OutputSender.deadLetterHeaderNames.contains($0.key) }
            headers.append(KafkaHeader(key: "messageId", string: identity.messageId))
            headers.append(KafkaHeader(key: "error.code", string: error.code.rawValue))
            headers.append(KafkaHeader(key: "error.detail", string: detail))
            headers.append(KafkaHeader(key: "source.topic", string: message.topic))
            headers.append(KafkaHeader(key: "source.partition", string: String(message.partition)))
            headers.append(KafkaHeader(key: "source.offset", string: String(message.offset)))
            let deadLetter = KafkaProducerRecord(
                topic: configuration.topics.deadLetters,
                key: message.key,
                value: message.value,
                headers: headers
            )
            ticket.add(2)
            await sender.send(OutputSender.Output(record: deadLetter, acknowledgement: .deadLetter(ticket)))
            await sender.send(outcomeOutput(rejected, sourceTimestamp: message.timestamp, ticket: ticket))

        case .expired(let identity, let cause, let detail):
            recordInput(of: identity)
            let expired = AnalyticsEvent(kind: .expired, identity: identity, occurredAt: .now(), reasonDetail: nil, cause: cause)
            logger.debug("Event expired", metadata: ["eventId": "\(identity.eventId ?? "-")", "cause": "\(cause.rawValue)", "detail": "\(detail)"])
            ticket.add(1)
            await sender.send(outcomeOutput(expired, sourceTimestamp: message.timestamp, ticket: ticket))

        case .suppressed(let identity):
            recordInput(of: identity)
            let suppressed = AnalyticsEvent(kind: .suppressed, identity: identity, occurredAt: .now())
            ticket.add(1)
            await sender.send(outcomeOutput(suppressed, sourceTimestamp: message.timestamp, ticket: ticket))
        }

        // The processing loop's own unit: everything for this event is queued.
        ticket.finishUnit()
        // Reading an event can only call for a pause: at the limit, or while a sink is throttled.
        if tracker.inFlight >= configuration.maxInFlightPerPartition || hasThrottledSinks.load(ordering: .relaxed) {
            applyBackpressure(to: tracker, consumer: consumer)
        }
    }

    /// Turns the sinks' answer for one notification (all of them, combined by ``SinkDelivery/answer(_:from:)``) into
    /// its outcome: `push.delivered` when every sink took it (its timer scheduled once that record and the timer
    /// record are acknowledged: ``TimerArming``), `push.failed` with the first failure's reason otherwise (plus a
    /// `token.invalidated` event when the token is dead). A sink that stopped leaves the event uncommitted and stops
    /// the pipeline.
    private func finishDelivery(_ delivery: SinkDelivery, outcome: SinkOutcome, from sinkName: String, sender: OutputSender) {
        let ticket = delivery.ticket
        // The partition moved to another instance, which processes the event again: nothing more to do here.
        guard !ticket.tracker.isRetired else { return }
        // The delivery's fields are read where it holds them, not bound to locals: a copy would take a reference
        // count for each text, and the identity's again for each record made from it.
        // The outcome's analytics record, and a second one (the token event): two variables, not an array made for
        // every event.
        let analytics: OutputSender.Output
        var second: OutputSender.Output?
        // A delivered timer's record, sent once the push.delivered is acknowledged.
        var arming: TimerArming?
        switch outcome {
        case .abandoned(let reason):
            // Not an outcome: the event stays uncommitted and is processed again after a restart. A sink that
            // gives events up while the pipeline runs (it stopped) must stop the pipeline, or every later
            // commit of the partition would wait for good. While the pipeline stops, the sinks give up what they
            // hold as it cancels them; a sink stopped by refused credentials (`auth`) is still reported, so that
            // `run` ends with the error.
            ticket.tracker.abandon(at: ticket.offset)
            if !isStopping || reason.code == .auth { stopBecauseSinkStopped(sinkName, reason) }
            return
        case .expired(let detail):
            // Its expiresAt passed while it waited to be sent: not delivered, as one read after it is not.
            let expired = AnalyticsEvent(kind: .expired, identity: delivery.identity, occurredAt: .now(), cause: .ttl)
            logger.debug("Event expired before it could be sent", metadata: ["eventId": "\(delivery.eventId)", "sink": "\(sinkName)", "detail": "\(detail)"])
            analytics = outcomeOutput(expired, sourceTimestamp: delivery.sourceTimestamp, ticket: ticket)
        case .failed(let reason):
            let failed = AnalyticsEvent(
                kind: .failed,
                identity: delivery.identity,
                occurredAt: .now(),
                sink: sinkName,
                reasonCode: reason.code.rawValue,
                reasonDetail: reason.detail
            )
            analytics = outcomeOutput(failed, sourceTimestamp: delivery.sourceTimestamp, ticket: ticket)
            if reason.code == .invalidToken {
                second = tokenInvalidatedOutput(delivery, reason: reason, ticket: ticket)
            }
        case .delivered:
            // Named in route order, whatever order they answered in.
            let value = AnalyticsEvent.encode(
                kind: .delivered,
                identity: delivery.identity,
                occurredAt: .now(),
                sink: delivery.sinkNames ?? sinkName
            )
            if let timer = delivery.timer, replay == nil {
                // Its timer record is sent once the push.delivered is acknowledged, and the timer scheduled once the
                // record is (``TimerArming``): a unit of the event until then.
                let expiresAt: Timestamp =
                    switch timer {
                    case .endsAt(let end): end
                    case .duration(let seconds): eventOrWallTime(delivery.occurredAt).adding(seconds: seconds)
                    }
                let pending = TimerBook.PendingTimer(identity: delivery.identity, expiresAt: expiresAt, partition: delivery.partition)
                arming = TimerArming(pending, record: timerRecord(pending), ticket: ticket, in: timers)
            }
            analytics = outcomeOutput(
                kind: .delivered,
                messageId: delivery.identity.messageId,
                value: value,
                sourceTimestamp: delivery.sourceTimestamp,
                ticket: ticket,
                arming: arming
            )
        }
        ticket.add(second == nil && arming == nil ? 1 : 2)
        sender.sendNow(analytics)
        if let second { sender.sendNow(second) }
        ticket.finishUnit()
    }

    /// The `token.invalidated` record of a notification whose token a sink found dead.
    private func tokenInvalidatedOutput(_ delivery: SinkDelivery, reason: SinkFailure, ticket: EventTicket) -> OutputSender.Output {
        let event = TokenInvalidatedEvent(
            platform: delivery.platform,
            token: delivery.token,
            recipientId: delivery.recipientId,
            messageId: delivery.identity.messageId,
            sourceEventId: delivery.eventId,
            detail: reason.detail,
            invalidatedAt: reason.tokenInvalidatedAt,
            occurredAt: .now()
        )
        let record = KafkaProducerRecord(
            topic: configuration.topics.tokens,
            key: Array(delivery.token.utf8),
            value: event.encoded(),
            headers: [KafkaHeader(key: "type", string: TokenInvalidatedEvent.type)]
        )
        return OutputSender.Output(record: record, acknowledgement: .eventUnit(ticket))
    }

    /// A dry run's bookkeeping: the outcome each decision would have, counted, nothing written.
    private func countWithoutWriting(_ decision: EventProcessor.Decision, source message: KafkaConsumerMessage) {
        let event: AnalyticsEvent
        var payload: [UInt8]?
        var warned = false
        switch decision {
        case .deliver(let notification, _):
            payload = notification.payloadBytes
            warned = !notification.warnings.isEmpty
            if warned { logWarnings(of: notification, source: message) }
            let identity = MessageIdentity(request: notification.request, template: notification.templateID, messageId: notification.messageId)
            event = AnalyticsEvent(kind: .delivered, identity: identity, occurredAt: .now(), sink: "dry-run")
        case .rejected(let identity, let error), .awaitingDefinition(let identity, let error):
            event = AnalyticsEvent(kind: .rejected, identity: identity, occurredAt: .now(), reasonCode: error.code.rawValue, reasonDetail: error.issues.map(\.description).joined(separator: "; "))
        case .expired(let identity, let cause, _):
            event = AnalyticsEvent(kind: .expired, identity: identity, occurredAt: .now(), cause: cause)
        case .suppressed(let identity):
            event = AnalyticsEvent(kind: .suppressed, identity: identity, occurredAt: .now())
        }
        recordInput(of: event.identity, warned: warned, payload: payload)
        statistics.recordOutcome(kind: event.kind, cause: event.cause, reasonCode: event.reasonCode, bytes: event.encoded(), isTimerExpiry: false)
    }

    /// What the run does when an event's completion advanced its partition's commit position: the tracker is kept
    /// for storing the position, and a paused partition may resume.
    func positionAdvanced(in tracker: PartitionProgress, consumer: KafkaConsumer) {
        // The new position is stored with the others by the next ``storeCompletedPositions(of:)``: one
        // librdkafka call for all partitions instead of one per acknowledgement, and the tracker queued for it once.
        if tracker.markPositionToStore() {
            completedTrackers.withLock { $0[ObjectIdentifier(tracker)] = tracker }
        }
        // Completing events can only call for a resume.
        if tracker.isPaused { applyBackpressure(to: tracker, consumer: consumer) }
    }

    /// Pauses or resumes a partition for its in-flight count and for the throttled sinks its deliveries wait on.
    func applyBackpressure(to tracker: PartitionProgress, consumer: KafkaConsumer) {
        let partition = tracker.partition
        let throttled = throttledSinks.withLock { $0 }
        tracker.updateBackpressure(limit: configuration.maxInFlightPerPartition, throttledSinks: throttled) { pause in
            // For this tracker's reading only: a tracker retired late must not pause (or resume) the next reading.
            if pause {
                consumer.pause([partition], generation: tracker.generation)
            } else {
                consumer.resume([partition], generation: tracker.generation)
            }
        }
    }

    /// Stores the commit positions that advanced since the last call (the background auto-commit and the final
    /// commit pick them up; a replay's own commits, for a replay). Positions of retired trackers are dropped: their
    /// partitions were revoked. A dry run stores none: a background commit turned on by the configuration's properties
    /// would commit them.
    func storeCompletedPositions(of consumer: KafkaConsumer) {
        let trackers = completedTrackers.withLock { trackers in
            defer { trackers = [:] }
            return trackers
        }
        guard writesOutputs else { return }
        let positions = trackers.values.compactMap { tracker -> KafkaTopicPartitionOffset? in
            // Before the position is read: a later advance queues the tracker again.
            tracker.positionTakenForStore()
            guard !tracker.isRetired, let position = tracker.completedPosition else { return nil }
            return KafkaTopicPartitionOffset(topic: tracker.partition.topic, partition: tracker.partition.partition, offset: position)
        }
        store(positions, consumer: consumer)
    }

    /// Stores `positions` for the background auto-commit and the final commit; a replay keeps them for its own
    /// commits (``commitReplayProgress(_:consumer:)``), each partition's only when it is past the one kept before: the
    /// end of a range read to its end with nothing in flight (``storeReplayedRangeEnds(_:consumer:)``) must not be
    /// taken back by an event's completion stored just after.
    func store(_ positions: [KafkaTopicPartitionOffset], consumer: KafkaConsumer) {
        guard !positions.isEmpty else { return }
        guard replay == nil else {
            replayCommits.withLock { commits in
                for position in positions where (commits.done[position.topicPartition] ?? .min) < position.offset {
                    commits.done[position.topicPartition] = position.offset
                }
            }
            return
        }
        do throws(KafkaError) {
            try consumer.storeOffsets(positions)
        } catch {
            // A partition was revoked meanwhile: its new owner processes the rest again.
            logger.debug("Offsets not stored", metadata: ["error": "\(error)"])
        }
    }

    /// Stores advanced positions every 50 ms until cancelled.
    func keepStoringCompletedPositions(of consumer: KafkaConsumer) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            storeCompletedPositions(of: consumer)
        }
    }

    /// The analytics record of an event.
    func analyticsRecord(_ event: AnalyticsEvent) -> KafkaProducerRecord {
        analyticsRecord(kind: event.kind, messageId: event.identity.messageId, value: event.encoded())
    }

    /// The analytics record of an event of `kind` encoded as `value`, keyed by its message id.
    func analyticsRecord(kind: AnalyticsEvent.Kind, messageId: String, value: [UInt8]) -> KafkaProducerRecord {
        KafkaProducerRecord(topic: configuration.topics.analytics, key: Array(messageId.utf8), value: value, headers: Self.analyticsHeaders(kind))
    }

    /// An event's outcome record: counted in the statistics once acknowledged, then one unit of `ticket` is done.
    func outcomeOutput(_ event: AnalyticsEvent, sourceTimestamp: Date?, ticket: EventTicket) -> OutputSender.Output {
        outcomeOutput(
            kind: event.kind,
            cause: event.cause,
            reasonCode: event.reasonCode,
            messageId: event.identity.messageId,
            value: event.encoded(),
            sourceTimestamp: sourceTimestamp,
            ticket: ticket
        )
    }

    /// An outcome record of `kind` encoded as `value` (``AnalyticsEvent/encode(kind:identity:occurredAt:sink:reasonCode:reasonDetail:cause:)``);
    /// `arming`, a delivered timer notification's, sends its timer record once it is acknowledged.
    func outcomeOutput(
        kind: AnalyticsEvent.Kind,
        cause: AnalyticsEvent.ExpiryCause? = nil,
        reasonCode: String? = nil,
        messageId: String,
        value: [UInt8],
        sourceTimestamp: Date?,
        ticket: EventTicket,
        arming: TimerArming? = nil
    ) -> OutputSender.Output {
        let record = analyticsRecord(kind: kind, messageId: messageId, value: value)
        let counted = OutputSender.CountedOutcome(
            kind: kind,
            cause: cause,
            reasonCode: reasonCode,
            bytes: value,
            sourceTimestamp: sourceTimestamp,
            arming: arming
        )
        return OutputSender.Output(record: record, acknowledgement: .outcome(counted, ticket))
    }

    /// The `type` header of each kind of analytics record, made once and shared by every record of that kind
    /// (one stored array per kind: a dictionary by kind hashed the kind for every record).
    static func analyticsHeaders(_ kind: AnalyticsEvent.Kind) -> [KafkaHeader] {
        switch kind {
        case .delivered: deliveredHeaders
        case .failed: failedHeaders
        case .rejected: rejectedHeaders
        case .expired: expiredHeaders
        case .suppressed: suppressedHeaders
        }
    }

    private static let deliveredHeaders = typeHeader(.delivered)
    private static let failedHeaders = typeHeader(.failed)
    private static let rejectedHeaders = typeHeader(.rejected)
    private static let expiredHeaders = typeHeader(.expired)
    private static let suppressedHeaders = typeHeader(.suppressed)

    private static func typeHeader(_ kind: AnalyticsEvent.Kind) -> [KafkaHeader] {
        [KafkaHeader(key: "type", string: kind.rawValue)]
    }

    /// Counts an event that was not rendered, under the registered id of the template it names (its alias resolved),
    /// or under none for a name no plugin has: the counts by template (run summary, `/metrics`) then hold one
    /// `unknown` entry, however many names the input makes up, rather than one per name for as long as the process
    /// runs. (A rendered event is counted under its notification's template id, which is registered.)
    func recordInput(of identity: MessageIdentity, warned: Bool = false, payload: @autoclosure () -> [UInt8]? = nil) {
        let template = identity.template.flatMap { try? processor.registry.renderer(named: $0).templateID }
        statistics.recordInput(template: template, platform: identity.platform, warned: warned, payload: payload())
    }

    /// Logs the warnings of an event rendered with some (``RenderWarning``: a content key the template did not read, a
    /// missing personalization attribute, a `custom` key left out, …), at most ``warnedEventWarning``'s limit of lines a
    /// window; the event is still sent. Without this line a campaign's misspelt key was seen only by `render`.
    private func logWarnings(of notification: RenderedNotification, source message: KafkaConsumerMessage) {
        warnedEventWarning.log(
            to: logger,
            metadata: [
                "eventId": "\(notification.request.eventId)",
                "campaignId": "\(notification.request.campaignId)",
                "template": "\(notification.templateID)",
                "platform": "\(notification.platform.rawValue)",
                "topic": "\(message.topic)",
                "partition": "\(message.partition)",
                "offset": "\(message.offset)",
                "warnings": "\(Self.logged(notification.warnings))",
            ]
        )
    }

    /// A render's warnings as a log line carries them: `path: message`, joined by `; `, cut as a record's detail is.
    private static func logged(_ warnings: [RenderWarning]) -> String {
        AnalyticsEvent.boundedDetail(warnings.map(\.description).joined(separator: "; "))
    }

    /// The event's own time when replaying by event time, otherwise now.
    func eventOrWallTime(_ eventTime: Timestamp) -> Timestamp {
        switch decisionClock {
        case .wallClock: .now()
        case .eventTime: eventTime
        }
    }
}

/// A notification handed to its sinks, until they have all answered: what its outcome needs, held once by every
/// sink's completion. Not its payload (which can be large and is held by the sinks only as long as they need it),
/// nor its source record (only its position and timestamp).
///
/// The fields are the class's own, set in place: a separate context value, made and then stored, would be copied
/// (a reference count for each of its texts) and the original let go, for every event.
final class SinkDelivery: Sendable {
    let identity: MessageIdentity
    let platform: Platform
    let token: String
    let occurredAt: Timestamp
    /// The source record's partition (for the timer) and timestamp (for the latency statistics). Its offset is the
    /// ticket's.
    let partition: Int32
    let sourceTimestamp: Date?
    /// The names of the platform's sinks in route order, for the `push.delivered` record.
    let sinkNames: String?
    let timer: EventProcessor.TimerSchedule?
    let ticket: EventTicket
    /// The answers so far, when more than one sink was given the notification (with one, its answer is the outcome).
    /// `nil` until the first: an empty array would take a reference to the empty-array singleton every thread shares,
    /// for every event.
    private let answers = Mutex<[(outcome: SinkOutcome, sink: String)]?>(nil)
    private let sinkCount: Int

    /// Creates the delivery of `notification`, read from `source`.
    init(
        _ notification: borrowing RenderedNotification,
        source: borrowing KafkaConsumerMessage,
        sinkNames: String?,
        timer: EventProcessor.TimerSchedule?,
        ticket: EventTicket,
        sinkCount: Int
    ) {
        identity = MessageIdentity(
            messageId: notification.messageId,
            eventId: notification.request.eventId,
            campaignId: notification.request.campaignId,
            recipientId: notification.recipientId,
            platform: notification.recipientPlatform,
            template: notification.templateID
        )
        platform = notification.platform
        token = notification.token
        occurredAt = notification.request.occurredAt
        partition = source.partition
        sourceTimestamp = source.timestamp
        self.sinkNames = sinkNames
        self.timer = timer
        self.ticket = ticket
        self.sinkCount = sinkCount
    }

    /// The recipient's id (a rendered notification's identity always has it).
    var recipientId: String { identity.recipientId ?? "" }
    /// The source event's id (a rendered notification's identity always has it).
    var eventId: String { identity.eventId ?? "" }

    /// Records one sink's answer. Once every sink has answered, returns the outcome of them all: the first sink that
    /// gave the notification up, otherwise the first that failed it, otherwise the first that found it expired,
    /// otherwise delivered (by the last to answer).
    func answer(_ outcome: SinkOutcome, from sink: String) -> (outcome: SinkOutcome, sink: String)? {
        guard sinkCount > 1 else { return (outcome, sink) }
        return answers.withLock { kept in
            var answers = kept ?? []
            answers.append((outcome, sink))
            kept = answers
            guard answers.count == sinkCount else { return nil }
            return answers.first { if case .abandoned = $0.outcome { true } else { false } }
                ?? answers.first { if case .failed = $0.outcome { true } else { false } }
                ?? answers.first { if case .expired = $0.outcome { true } else { false } }
                ?? (outcome, sink)
        }
    }
}
