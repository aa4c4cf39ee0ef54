import CRdKafka
import Foundation
public import Logging
import Synchronization

/// Reads records from Kafka, in a consumer group (``subscribe(topics:)``) or from explicitly assigned partitions
/// (``assign(_:)``).
///
/// Records arrive on ``messages``, an `AsyncSequence` fed in batches by the consumer's own poll thread.
/// Assignment changes arrive on ``events``. Nothing is committed until the application says a record is done,
/// with ``storeOffsets(_:)`` (committed in the background and at close) or ``commit(_:)`` (committed now).
///
/// ```swift
/// let consumer = try KafkaConsumer(configuration: .init(bootstrapServers: servers, groupID: "pipeline"), logger: logger)
/// try consumer.subscribe(topics: ["campaign.sends"])
/// for try await message in consumer.messages {
///     handle(message)
///     try consumer.storeOffsets([message.nextPosition])
/// }
/// await consumer.close()
/// ```
public final class KafkaConsumer: Sendable {
    /// What happened to the consumer's assignment, or a non-fatal problem.
    public enum Event: Sendable, Hashable {
        /// These partitions are now this consumer's; their records follow on ``KafkaConsumer/messages``.
        case partitionsAssigned([KafkaTopicPartition])
        /// These partitions were taken away; buffered records of theirs were dropped. With auto-commit on, the
        /// positions stored for them were committed first; positions stored from now on are not committed by
        /// this consumer.
        case partitionsRevoked([KafkaTopicPartition])
        /// These partitions were taken away because the consumer lost its place in the group (its session timed
        /// out, for example while the brokers were unreachable): as ``partitionsRevoked(_:)``, but nothing could be
        /// committed for them, and another member may own them already. The consumer rejoins the group by itself once
        /// it reaches the brokers again (``partitionsAssigned(_:)`` follows).
        case partitionsLost([KafkaTopicPartition])
        /// A problem librdkafka reported that the consumer survives (a broker went down, a fetch failed).
        case error(KafkaError)
    }

    struct State {
        var isStarted = false
        /// No more commands are taken (closing, or the poll thread ended).
        var isClosed = false
        /// ``close()`` was called.
        var isCloseRequested = false
        var assignment: Set<KafkaTopicPartition> = []
        /// The offset after the last record kept for the application (handed over, buffered or held back while
        /// paused), per partition (poll thread writes): where fetching resumes after a pause.
        var positions: [KafkaTopicPartition: Int64] = [:]
        /// How many times each partition was assigned to this consumer (bumped synchronously on assignment).
        var generations: [KafkaTopicPartition: Int] = [:]
        /// Partitions revoked during the poll in progress (the poll thread drops what it polled for them before).
        var revokedDuringPoll: Set<KafkaTopicPartition> = []
        /// Partitions paused by the application: records of theirs that a poll still returns are held back with
        /// those buffered at the pause, and handed over after ``KafkaConsumer/resume(_:generation:)``.
        var paused: Set<KafkaTopicPartition> = []
        /// ``KafkaConsumer/stopReading()`` was called: every partition stays paused, those assigned later included.
        var isReadingStopped = false
        /// Partitions the poll thread paused in librdkafka while the buffer was full (not the application's pauses):
        /// resumed once there is room again.
        var pausedWhileFull: Set<KafkaTopicPartition> = []
        var commands: [@Sendable (OpaquePointer) -> Void] = []
    }

    /// State shared with the poll thread, which must not retain the consumer itself.
    final class Shared: Sendable {
        let state = Mutex(State())
        /// Records converted for the application, counted once per batch.
        let recordsFetched = Atomic<Int>(0)
    }

    let handle: RDKafkaHandle
    private let shared: Shared
    private let buffer: MessageBuffer
    let configuration: KafkaConsumerConfiguration
    let logger: Logger
    private let eventStream: AsyncStream<Event>
    private let eventContinuation: AsyncStream<Event>.Continuation
    private let pollThread: Mutex<PollThread?>

    /// Creates a consumer. It starts reading when ``subscribe(topics:)`` or ``assign(_:)`` is called.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` when librdkafka refuses a property.
    public init(configuration: KafkaConsumerConfiguration, logger: Logger) throws(KafkaError) {
        var logger = logger
        logger[metadataKey: KafkaLoggingKeys.clientKind] = "consumer"
        if let groupID = configuration.groupID { logger[metadataKey: KafkaLoggingKeys.groupID] = "\(groupID)" }
        let (eventStream, eventContinuation) = AsyncStream.makeStream(of: Event.self)
        let buffer = MessageBuffer(capacity: configuration.bufferCapacity)
        let shared = Shared()
        let callbacks = RDKafkaCallbacks(logger: logger)
        let rebalanceLogger = logger
        let commitsOnRevocation = configuration.isAutoCommitEnabled && configuration.properties["enable.auto.commit"] != "false"
        let willRevoke = configuration.willRevokePartitions
        callbacks.rebalance = { rk, code, partitions in
            Self.rebalance(
                rk,
                code: code,
                partitions: partitions,
                shared: shared,
                buffer: buffer,
                events: eventContinuation,
                commitsOnRevocation: commitsOnRevocation,
                willRevoke: willRevoke,
                logger: rebalanceLogger
            )
        }
        callbacks.error = { code, reason in
            let error = KafkaError.librdkafka(.consumerFailed, code, message: reason)
            rebalanceLogger.warning("Consumer error: \(reason)", metadata: [KafkaLoggingKeys.errorName: "\(error.librdkafkaName ?? "")"])
            eventContinuation.yield(.error(error))
        }
        self.handle = try RDKafkaHandle(
            type: RD_KAFKA_CONSUMER,
            properties: configuration.librdkafkaProperties,
            callbacks: callbacks
        )
        rd_kafka_poll_set_consumer(handle.pointer)
        self.shared = shared
        self.buffer = buffer
        self.configuration = configuration
        self.logger = logger
        self.eventStream = eventStream
        self.eventContinuation = eventContinuation
        self.pollThread = Mutex(nil)
    }

    deinit {
        pollThread.withLock { $0?.requestStop() }
    }

    /// The records read, in batches from the poll thread; ends after ``close()`` or with a ``KafkaError`` when
    /// the consumer cannot go on (no broker reachable at start, a fatal error).
    ///
    /// Iterate it from one task only.
    public var messages: KafkaConsumerMessages { KafkaConsumerMessages(buffer: buffer) }

    /// Assignment changes and non-fatal errors, in the order they happened.
    public var events: AsyncStream<Event> { eventStream }

    /// The partitions currently assigned to this consumer (those being revoked left out: see
    /// ``KafkaConsumerConfiguration/willRevokePartitions``).
    public var assignment: Set<KafkaTopicPartition> { shared.state.withLock { $0.assignment } }

    /// The id the group's coordinator gave this consumer's membership (`rd_kafka_memberid`); empty before it first
    /// joins, and after it lost its membership until it joins again. It changes only when the coordinator dropped the
    /// member (its session timed out, or a join or sync answered that the member is unknown), which not every such
    /// drop reports as ``Event/partitionsLost(_:)``.
    public var memberID: String {
        guard let id = rd_kafka_memberid(handle.pointer) else { return "" }
        defer { rd_kafka_mem_free(handle.pointer, id) }
        return String(cString: id)
    }

    /// How many times `partition` has been assigned to this consumer; it changes, synchronously, every time the
    /// partition is assigned again (for example after an eager rebalance gave it back). Work begun under an
    /// older generation belongs to a reading of the partition that is over.
    public func assignmentGeneration(of partition: KafkaTopicPartition) -> Int {
        shared.state.withLock { $0.generations[partition] ?? 0 }
    }

    /// Whether `partition` is assigned and still in `generation` (see ``KafkaConsumerMessage/assignmentGeneration``):
    /// records read under an older generation, or of a partition revoked since, belong to a reading that is over.
    public func isReading(_ partition: KafkaTopicPartition, generation: Int) -> Bool {
        shared.state.withLock { $0.assignment.contains(partition) && $0.generations[partition] == generation }
    }

    // MARK: - Starting

    /// Joins the consumer group and starts reading the given topics. Partitions are assigned by the group, and
    /// reading starts at each one's committed offset (or per ``KafkaConsumerConfiguration/offsetReset``).
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` without a group id; ``KafkaError/Code/consumerFailed``
    ///   when librdkafka refuses the subscription.
    public func subscribe(topics: [String]) throws(KafkaError) {
        guard configuration.groupID != nil else {
            throw KafkaError(code: .invalidConfiguration, message: "subscribing needs a group id ('group.id')")
        }
        let list = RDKafkaTopicPartitionList(capacity: topics.count)
        for topic in topics {
            rd_kafka_topic_partition_list_add(list.pointer, topic, RD_KAFKA_PARTITION_UA)
        }
        let err = rd_kafka_subscribe(handle.pointer, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.librdkafka(.consumerFailed, err, topic: topics.joined(separator: ","))
        }
        logger.info("Subscribed", metadata: [KafkaLoggingKeys.topic: "\(topics.joined(separator: ","))"])
        startPolling()
    }

    /// Reads the given partitions from the given offsets, outside any group rebalancing.
    ///
    /// Offsets may be real offsets or the logical ``KafkaOffset`` values (beginning, end, stored).
    ///
    /// - Throws: ``KafkaError/Code/consumerFailed`` when librdkafka refuses the assignment.
    public func assign(_ positions: [KafkaTopicPartitionOffset]) throws(KafkaError) {
        // A new assignment starts unpaused, in librdkafka too.
        Self.resumeInLibrdkafka(handle.pointer, shared.state.withLock { $0.paused })
        let list = RDKafkaTopicPartitionList(positions)
        let err = rd_kafka_assign(handle.pointer, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            var error = KafkaError.librdkafka(.consumerFailed, err, topic: positions.first?.topic)
            error.message += " (assigning \(Self.describe(positions.map(\.topicPartition))))"
            throw error
        }
        let partitions = positions.map(\.topicPartition)
        shared.state.withLock { state in
            state.assignment = Set(partitions)
            state.positions = [:]
            state.paused = []
            for partition in partitions { state.generations[partition, default: 0] += 1 }
        }
        eventContinuation.yield(.partitionsAssigned(partitions))
        startPolling()
    }

    private func startPolling() {
        let (handle, shared, buffer, logger, configuration, events) =
            (self.handle, self.shared, self.buffer, self.logger, self.configuration, self.eventContinuation)
        pollThread.withLock { thread in
            guard thread == nil else { return }
            shared.state.withLock { $0.isStarted = true }
            thread = PollThread(name: "kafka-consumer-poll") { thread in
                Self.servePollLoop(
                    handle: handle,
                    shared: shared,
                    buffer: buffer,
                    events: events,
                    configuration: configuration,
                    logger: logger,
                    thread: thread
                )
            }
        }
    }

    // MARK: - Offsets

    /// Marks positions as done: they are committed by the background auto-commit and at ``close()``.
    ///
    /// Pass the position *after* the last record done (``KafkaConsumerMessage/nextPosition``).
    ///
    /// - Throws: ``KafkaError/Code/commitFailed`` for a partition that is not assigned to this consumer.
    public func storeOffsets(_ positions: [KafkaTopicPartitionOffset]) throws(KafkaError) {
        guard !positions.isEmpty else { return }
        let list = RDKafkaTopicPartitionList(positions)
        let err = rd_kafka_offsets_store(handle.pointer, list.pointer)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError.librdkafka(.commitFailed, err, topic: positions.first?.topic)
        }
        if let failed = list.elements.first(where: { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }) {
            throw KafkaError.librdkafka(
                .commitFailed,
                failed.error,
                topic: failed.position.topic,
                partition: failed.position.partition
            )
        }
    }

    /// Commits positions now and waits for the group coordinator to confirm.
    ///
    /// Pass the position *after* the last record done (``KafkaConsumerMessage/nextPosition``). With no positions,
    /// commits every stored position of the current assignment.
    ///
    /// With no group coordinator (the brokers gone), librdkafka keeps a commit waiting for one until the group's
    /// session times out (``KafkaConsumerConfiguration/sessionTimeout``): a caller that cannot wait that long
    /// (a stopping process) gives a `limit`. Past it, or once the caller's task is cancelled, this stops waiting; the
    /// commit itself is not withdrawn and may still land.
    ///
    /// - Parameter limit: the longest to wait (`nil`: until the coordinator answers, even for a cancelled task).
    /// - Throws: ``KafkaError/Code/commitFailed`` naming the partition the coordinator refused, or with `_TIMED_OUT`
    ///   when `limit` passed first; ``KafkaError/Code/cancelled`` when the task was cancelled while waiting within a
    ///   `limit`.
    public func commit(_ positions: [KafkaTopicPartitionOffset] = [], within limit: Duration? = nil) async throws(KafkaError) {
        let handle = self.handle
        let what = positions.isEmpty ? "the commit of the stored positions" : "the commit of \(Self.describe(positions))"
        try await BlockingCalls.waitingAtMost(limit, for: what, failingWith: .commitFailed) { () throws(KafkaError) in
            let list = positions.isEmpty ? nil : RDKafkaTopicPartitionList(positions)
            let err = rd_kafka_commit(handle.pointer, list?.pointer, 0)
            if err == RD_KAFKA_RESP_ERR__NO_OFFSET { return }
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                var error = KafkaError.librdkafka(.commitFailed, err, topic: positions.first?.topic)
                error.message += positions.isEmpty ? " (committing the stored positions)" : " (committing \(Self.describe(positions)))"
                throw error
            }
            if let failed = list?.elements.first(where: { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }) {
                throw KafkaError.librdkafka(
                    .commitFailed,
                    failed.error,
                    topic: failed.position.topic,
                    partition: failed.position.partition
                )
            }
        }
    }

    /// Commits positions with a text each, kept by the group coordinator with the offset (Kafka's commit metadata;
    /// read back with ``committedWithMetadata(_:timeout:)``), and waits for the coordinator to confirm.
    ///
    /// Positions stored with ``storeOffsets(_:)`` carry no metadata (librdkafka 2.0 stores none), and the background
    /// auto-commit and a commit of the stored positions commit them without it, replacing the text committed here:
    /// commit through this call only for partitions whose offsets are not stored.
    ///
    /// `limit` bounds the wait as for the commit of positions without metadata.
    ///
    /// - Throws: ``KafkaError/Code/commitFailed`` naming the partition the coordinator refused (a text longer than
    ///   the broker's `offset.metadata.max.bytes`, 4096 by default, is refused with `OFFSET_METADATA_TOO_LARGE`), or
    ///   with `_TIMED_OUT` when `limit` passed first; ``KafkaError/Code/cancelled`` when the task was cancelled while
    ///   waiting within a `limit`.
    public func commit(_ offsets: [KafkaOffsetAndMetadata], within limit: Duration? = nil) async throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let handle = self.handle
        let what = "the commit of \(Self.describe(offsets.map(\.position))) with metadata"
        try await BlockingCalls.waitingAtMost(limit, for: what, failingWith: .commitFailed) { () throws(KafkaError) in
            let list = RDKafkaTopicPartitionList(offsets)
            let err = rd_kafka_commit(handle.pointer, list.pointer, 0)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                var error = KafkaError.librdkafka(.commitFailed, err, topic: offsets.first?.position.topic)
                error.message += " (committing \(Self.describe(offsets.map(\.position))) with metadata)"
                throw error
            }
            if let failed = list.elements.first(where: { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }) {
                throw KafkaError.librdkafka(.commitFailed, failed.error, topic: failed.position.topic, partition: failed.position.partition)
            }
        }
    }

    /// The committed positions of the given partitions for this consumer's group (``KafkaOffset/invalid`` where
    /// nothing is committed).
    ///
    /// - Throws: ``KafkaError/Code/offsetLookupFailed`` when the look-up failed, for the request or for one of the
    ///   partitions (naming it): a partition whose look-up failed is never reported as having nothing committed.
    ///   ``KafkaError/Code/cancelled`` when the task is cancelled first (the look-up is abandoned).
    public func committed(
        _ partitions: [KafkaTopicPartition],
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [KafkaTopicPartitionOffset] {
        try await committedWithMetadata(partitions, timeout: timeout).map(\.position)
    }

    /// The committed positions of the given partitions for this consumer's group (``KafkaOffset/invalid`` where
    /// nothing is committed), each with the metadata committed with it (empty when there was none).
    ///
    /// - Throws: ``KafkaError/Code/offsetLookupFailed`` when the look-up failed, for the request or for one of the
    ///   partitions (naming it): a partition whose look-up failed is never reported as having nothing committed.
    ///   ``KafkaError/Code/cancelled`` when the task is cancelled first (the look-up is abandoned).
    public func committedWithMetadata(
        _ partitions: [KafkaTopicPartition],
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [KafkaOffsetAndMetadata] {
        let handle = self.handle
        return try await BlockingCalls.lookUp("the committed positions of \(Self.describe(partitions))", failingWith: .offsetLookupFailed, within: timeout) { () throws(KafkaError) in
            let list = RDKafkaTopicPartitionList(partitions)
            let err = rd_kafka_committed(handle.pointer, list.pointer, timeout.cMilliseconds)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                var error = KafkaError.librdkafka(.offsetLookupFailed, err, topic: partitions.first?.topic)
                error.message += " (committed positions of \(Self.describe(partitions)), waiting at most \(timeout))"
                throw error
            }
            let elements = list.elements
            if let failed = elements.first(where: { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }) {
                var error = KafkaError.librdkafka(
                    .offsetLookupFailed,
                    failed.error,
                    topic: failed.position.topic,
                    partition: failed.position.partition
                )
                error.message += " (its committed position)"
                throw error
            }
            return zip(elements, list.metadata).map { KafkaOffsetAndMetadata($0.position, metadata: $1) }
        }
    }

    /// Moves the read position of assigned partitions. Buffered records of those partitions are dropped, so the
    /// next record of each partition that ``messages`` takes from the buffer is the one at the new position; records
    /// an iterator has already taken (its current batch, up to ``KafkaConsumerConfiguration/maxBatchSize``) are
    /// still delivered, as with ``pause(_:)``.
    ///
    /// - Parameter timeout: how long to wait for each partition's fetcher to take the new position (a local step,
    ///   usually microseconds); librdkafka releases that wait a thousandth of it are given it scaled (see
    ///   `Duration.seekTimeoutMilliseconds(librdkafkaVersion:)`).
    /// - Throws: ``KafkaError/Code/seekFailed`` naming the partition (for example one not assigned).
    public func seek(_ positions: [KafkaTopicPartitionOffset], timeout: Duration = .seconds(10)) async throws(KafkaError) {
        let buffer = self.buffer
        let shared = self.shared
        let result: Result<Void, KafkaError> = await withCheckedContinuation { continuation in
            enqueueCommand { rk in
                // On the poll thread: nothing fetched before the seek can be pushed after it.
                buffer.remove(partitions: Set(positions.map(\.topicPartition)))
                let list = RDKafkaTopicPartitionList(positions)
                if let error = rd_kafka_seek_partitions(rk, list.pointer, timeout.seekTimeoutMilliseconds(librdkafkaVersion: rd_kafka_version())) {
                    continuation.resume(returning: .failure(.consuming(.seekFailed, error, topic: positions.first?.topic)))
                    return
                }
                if let failed = list.elements.first(where: { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }) {
                    continuation.resume(
                        returning: .failure(
                            .librdkafka(
                                .seekFailed,
                                failed.error,
                                topic: failed.position.topic,
                                partition: failed.position.partition
                            )
                        )
                    )
                    return
                }
                shared.state.withLock { state in
                    // A logical offset (beginning, end) has no number yet: forget the old one, so a later resume
                    // does not undo the seek.
                    for position in positions {
                        state.positions[position.topicPartition] = position.offset >= 0 ? position.offset : nil
                    }
                }
                continuation.resume(returning: .success(()))
            } orElse: {
                continuation.resume(returning: .failure(KafkaError(code: .closed, message: "seek on a closed or unstarted consumer")))
            }
        }
        try result.get()
    }

    /// For tests: raises a fatal error as a fenced static group member gets one (`FENCED_INSTANCE_ID`).
    func simulateFatalError() -> Bool {
        handle.simulateFatalError(RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID, reason: "simulated fencing")
    }

    /// Partitions or positions named in an error: the first eight, and how many more.
    static func describe(_ items: [some CustomStringConvertible]) -> String {
        guard !items.isEmpty else { return "no partitions" }
        let named = items.prefix(8).map(\.description).joined(separator: ", ")
        return items.count > 8 ? "\(named) and \(items.count - 8) more" : named
    }

    /// The partitions paused by the application, once each pause has taken effect on the poll thread (for tests).
    var pausedPartitions: Set<KafkaTopicPartition> { shared.state.withLock { $0.paused } }

    /// The partitions the poll thread paused because the buffer stayed full (for tests).
    var pausedForFullBuffer: Set<KafkaTopicPartition> { shared.state.withLock { $0.pausedWhileFull } }

    /// How many records the consumer has taken from librdkafka for ``messages`` (for tests: a record dropped and
    /// fetched again counts twice).
    var recordsFetched: Int { shared.recordsFetched.load(ordering: .relaxed) }

    /// Stops handing over records for good, while the consumer stays in its group: every partition is paused (those
    /// assigned later too), and ``resume(_:generation:)`` does nothing from now on. For an application that stops
    /// reading but still finishes work (a drain): its records stay unread, and the poll thread, which would otherwise
    /// wait for room in the full buffer, keeps serving the group (a revocation or a lost session reaches ``events``
    /// during the drain, not only at ``close()``).
    public func stopReading() {
        shared.state.withLock { $0.isReadingStopped = true }
        pause(Array(assignment))
    }

    /// Stops handing over records of the given partitions, for backpressure: fetching stops, and records already
    /// fetched but not yet handed over on ``messages`` are held back (a batch being handed over at the same moment may
    /// still carry a few). ``resume(_:generation:)`` hands them over, then continues fetching after them.
    ///
    /// Returns at once; the pause happens on the poll thread, in call order with ``resume(_:generation:)``, so a
    /// pause and a resume called one after the other always take effect in that order.
    ///
    /// - Parameters:
    ///   - partitions: the partitions to pause. Those not assigned when the pause takes effect are left alone: the
    ///     pause of a partition revoked meanwhile would otherwise hold back its next reading.
    ///   - generation: when given, only partitions still in this ``assignmentGeneration(of:)`` are paused (work
    ///     of a reading that is over does not pause the partition's next one).
    public func pause(_ partitions: [KafkaTopicPartition], generation: Int? = nil) {
        let buffer = self.buffer
        let shared = self.shared
        let logger = self.logger
        enqueueCommand { rk in
            let partitions = shared.state.withLock { state in
                partitions.filter { state.assignment.contains($0) && (generation == nil || state.generations[$0] == generation) }
            }
            guard !partitions.isEmpty else { return }
            let paused = Set(partitions)
            let list = RDKafkaTopicPartitionList(partitions)
            let err = rd_kafka_pause_partitions(rk, list.pointer)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.warning("Pause failed", metadata: [KafkaLoggingKeys.errorName: "\(String(cString: rd_kafka_err2name(err)))"])
                return
            }
            // Nothing is being buffered meanwhile (this is the poll thread). What is buffered is held back, not
            // fetched again, and so is what a poll still returns for these partitions: positions stay after it.
            buffer.park(partitions: paused)
            shared.state.withLock { $0.paused.formUnion(paused) }
        } orElse: {}
    }

    /// Resumes partitions paused with ``pause(_:generation:)``: the records held back are handed over first, then fetching
    /// continues after them (librdkafka 2.0 would otherwise restart from an older position and deliver records
    /// again). Returns at once; the resume happens on the poll thread.
    ///
    /// - Parameter generation: when given, only partitions still in this ``assignmentGeneration(of:)`` are resumed
    ///   (work of a reading that is over does not undo the pause of the partition's next one).
    public func resume(_ partitions: [KafkaTopicPartition], generation: Int? = nil) {
        let buffer = self.buffer
        let shared = self.shared
        let logger = self.logger
        enqueueCommand { rk in
            let partitions = shared.state.withLock { state in
                state.isReadingStopped ? [] : partitions.filter { generation == nil || state.generations[$0] == generation }
            }
            guard !partitions.isEmpty else { return }
            let err = Self.resumeInLibrdkafka(rk, Set(partitions))
            // Before the next poll, so they come before anything fetched from now on (and whatever became of the
            // resume: they were read, and are the application's).
            buffer.unpark(partitions: partitions)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.warning("Resume failed", metadata: [KafkaLoggingKeys.errorName: "\(String(cString: rd_kafka_err2name(err)))"])
                return
            }
            let positions = shared.state.withLock { state in
                state.paused.subtract(partitions)
                return partitions.compactMap { partition in
                    state.positions[partition].map {
                        KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: $0)
                    }
                }
            }
            Self.reposition(rk, at: positions, logger: logger, after: "resume")
        } orElse: {}
    }

    /// The low and high watermark of a partition, asked of its leader.
    ///
    /// - Throws: ``KafkaError/Code/offsetLookupFailed`` naming the partition when its leader did not answer in time;
    ///   ``KafkaError/Code/cancelled`` when the task is cancelled first (the look-up is abandoned).
    public func watermarks(
        topic: String,
        partition: Int32,
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> KafkaWatermarks {
        let handle = self.handle
        return try await BlockingCalls.lookUp("the watermarks of \(topic)/\(partition)", failingWith: .offsetLookupFailed, within: timeout) { () throws(KafkaError) in
            try handle.blockingWatermarks(topic: topic, partition: partition, timeout: timeout)
        }
    }

    /// The number of partitions of a topic.
    ///
    /// - Throws: ``KafkaError/Code/metadataFailed`` (`UNKNOWN_TOPIC_OR_PART`) when the topic does not exist;
    ///   ``KafkaError/Code/cancelled`` when the task is cancelled first (the look-up is abandoned).
    public func partitionCount(topic: String, timeout: Duration = .seconds(10)) async throws(KafkaError) -> Int32 {
        let handle = self.handle
        return try await BlockingCalls.lookUp("the partition count of \(topic)", failingWith: .metadataFailed, within: timeout) { () throws(KafkaError) in
            let topics = try handle.blockingMetadata(topic: topic, timeout: timeout)
            return topics.first { $0.topic == topic }?.partitions ?? 0
        }
    }

    // MARK: - Closing

    /// Leaves the group (committing stored positions when auto-commit is on), stops the poll thread and ends
    /// ``messages`` and ``events``. Safe to call more than once.
    public func close() async {
        _ = await close(waitingAtMost: nil)
    }

    /// Closes as ``close()`` does, waiting at most `limit` for librdkafka's close.
    ///
    /// With no group coordinator (the brokers gone), librdkafka's close waits for the commits it has queued (the
    /// background auto-commit's, the close's own) until the group's session times out (`session.timeout.ms`). Past
    /// `limit` this returns anyway: the streams are ended, and the close goes on on the consumer's own thread until
    /// librdkafka gives up (what it had not committed is read again by the partitions' next owner).
    ///
    /// - Returns: whether the close finished within `limit` (from a later call, at once: whether it has finished).
    @discardableResult
    public func close(within limit: Duration) async -> Bool {
        await close(waitingAtMost: limit)
    }

    private func close(waitingAtMost limit: Duration?) async -> Bool {
        let thread = pollThread.withLock { $0 }
        let wasRequested = shared.state.withLock { state in
            defer {
                state.isCloseRequested = true
                state.isClosed = true
            }
            return state.isCloseRequested
        }
        // A later call waits for nothing: it tells whether the first one's close has finished since.
        guard !wasRequested else { return thread?.hasExited ?? true }
        let finished: Bool
        if let thread {
            finished = await thread.stop(within: limit)
        } else {
            let handle = self.handle
            do throws(KafkaError) {
                try await BlockingCalls.waitingAtMost(limit, for: "the consumer's close", failingWith: .consumerFailed) {
                    _ = rd_kafka_consumer_close(handle.pointer)
                }
                finished = true
            } catch {
                finished = false
            }
        }
        buffer.finish()
        eventContinuation.finish()
        handle.callbacks.flushRepeatedLines()
        if finished {
            logger.debug("Consumer closed")
        } else {
            logger.debug("Consumer close not finished within its limit; it goes on in the background")
        }
        return finished
    }

    private func enqueueCommand(_ command: @escaping @Sendable (OpaquePointer) -> Void, orElse: () -> Void) {
        let accepted = shared.state.withLock { state in
            guard state.isStarted, !state.isClosed else { return false }
            state.commands.append(command)
            return true
        }
        if accepted {
            if let queue = rd_kafka_queue_get_consumer(handle.pointer) {
                rd_kafka_queue_yield(queue)
                rd_kafka_queue_destroy(queue)
            }
        } else {
            orElse()
        }
    }
}

// MARK: - Poll thread

extension KafkaConsumer {
    /// The fetch loop, run on the consumer's own thread: wait for room, poll one record (blocking briefly), take
    /// whatever else is ready without blocking, hand the batch over. Rebalance callbacks run inside the polls.
    private static func servePollLoop(
        handle: RDKafkaHandle,
        shared: Shared,
        buffer: MessageBuffer,
        events: AsyncStream<Event>.Continuation,
        configuration: KafkaConsumerConfiguration,
        logger: Logger,
        thread: PollThread
    ) {
        let rk = handle.pointer
        // However the loop ends, the consumer is closed and queued commands still get an answer.
        defer {
            let leftovers = shared.state.withLock { state in
                state.isClosed = true
                defer { state.commands = [] }
                return state.commands
            }
            for command in leftovers { command(rk) }
        }
        // Fail fast and clearly when no broker answers.
        do throws(KafkaError) {
            _ = try handle.blockingMetadata(topic: nil, timeout: configuration.connectTimeout)
        } catch {
            logger.error("No broker reachable", metadata: ["error": "\(error)"])
            buffer.finish(error: error)
            _ = rd_kafka_consumer_close(rk)
            return
        }
        let maxBatch = max(1, configuration.maxBatchSize)
        var raw = [UnsafeMutablePointer<rd_kafka_message_t>?](repeating: nil, count: maxBatch)
        var topicNames = SmallTable<OpaquePointer, String>()
        // Records a poll returned while the buffer was full (fetched before their partitions paused), handed over
        // first once there is room.
        var overflow: [KafkaConsumerMessage] = []
        // Since when the buffer has been full. A second of it (not the moments a busy application leaves it full
        // between two batches) pauses the partitions to keep serving the group: the pause drops what librdkafka had
        // fetched ahead, which is fetched again after the resume.
        var fullSince: ContinuousClock.Instant?

        while !thread.isStopRequested {
            let commands = shared.state.withLock { state in
                defer { state.commands = [] }
                return state.commands
            }
            for command in commands { command(rk) }
            guard buffer.waitForSpace(timeout: 0.1) else {
                let now = ContinuousClock.now
                if fullSince == nil { fullSince = now }
                guard let since = fullSince, now - since >= .seconds(1) else { continue }
                // The application takes nothing: the group is still served (rebalances run only inside a poll).
                let fatal = Self.serveGroupWhileFull(
                    handle: handle, shared: shared, buffer: buffer, events: events, logger: logger, overflow: &overflow, topicNames: &topicNames
                )
                if let fatal {
                    buffer.push(overflow)
                    buffer.finish(error: fatal)
                    thread.requestStop()
                    break
                }
                continue
            }
            fullSince = nil
            Self.resumeAfterFull(rk, shared: shared, buffer: buffer, logger: logger, overflow: &overflow)

            // rd_kafka_consumer_poll (not rd_kafka_consume_batch_queue) for every record: in librdkafka 2.0 only
            // it advances the application position that pause/resume and seek restart fetching from.
            var count = 0
            var timeout: Int32 = 100
            while count < maxBatch, let next = rd_kafka_consumer_poll(rk, timeout) {
                // A revocation served inside that poll makes what was polled before it for those partitions
                // stale: their new owner reads it. Drop it here, before it reaches the application.
                let revoked = shared.state.withLock { state in
                    defer { state.revokedDuringPoll = [] }
                    return state.revokedDuringPoll
                }
                if !revoked.isEmpty {
                    count = Self.dropMessages(of: revoked, from: &raw, count: count)
                }
                raw[count] = next
                count += 1
                timeout = 0
            }
            // The same for a revocation served inside the poll that ended the loop (returning nothing).
            let revoked = shared.state.withLock { state in
                defer { state.revokedDuringPoll = [] }
                return state.revokedDuringPoll
            }
            if !revoked.isEmpty {
                count = Self.dropMessages(of: revoked, from: &raw, count: count)
            }
            guard count > 0 else { continue }
            var batch: [KafkaConsumerMessage] = []
            batch.reserveCapacity(count)
            var fatal: KafkaError?
            // Taken after the polls: any revocation served in them dropped the records read before it, so every
            // record left was read under its partition's generation now.
            let (paused, generations) = shared.state.withLock { ($0.paused, $0.generations) }
            var generation = GenerationLookup(generations: generations)
            // Records of paused partitions, held back with those buffered at the pause (not dropped and fetched again).
            var held: [KafkaConsumerMessage] = []
            for index in 0..<count {
                guard let message = raw[index] else { continue }
                defer { rd_kafka_message_destroy(message) }
                if fatal != nil { continue }
                if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    fatal = Self.report(message, handle: handle, events: events, logger: logger)
                    continue
                }
                if !paused.isEmpty {
                    let partition = KafkaTopicPartition(topic: topicName(message.pointee.rkt, cache: &topicNames), partition: message.pointee.partition)
                    if paused.contains(partition) {
                        held.append(Self.convert(message, topicNames: &topicNames, generation: &generation))
                        continue
                    }
                }
                // Made in place in the batch: a message converted into a local first is copied in (a reference
                // count per field).
                batch.append(Self.convert(message, topicNames: &topicNames, generation: &generation))
            }
            if !held.isEmpty {
                Self.advancePositions(over: held, in: shared)
                shared.recordsFetched.add(held.count, ordering: .relaxed)
                buffer.hold(held)
            }
            if let fatal {
                buffer.push(batch)
                buffer.finish(error: fatal)
                thread.requestStop()
                break
            }
            if !batch.isEmpty { Self.advancePositions(over: batch, in: shared) }
            shared.recordsFetched.add(batch.count, ordering: .relaxed)
            buffer.push(batch)
        }
        // Closing serves the final revocation through the rebalance callback, here on this thread.
        let err = rd_kafka_consumer_close(rk)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("Consumer close reported \(String(cString: rd_kafka_err2name(err)))")
        }
    }

    /// One turn of the poll loop while the buffer is full: every assigned partition the application has not paused is
    /// paused in librdkafka (fetching stops; what it had fetched but not returned is dropped and fetched again after
    /// the resume), then the consumer is polled, briefly, for what only a poll serves: the group's rebalances and
    /// errors. The records it still returns (fetched before the pause) go to `overflow`, or are held back with their
    /// partition's if the application paused it. Returns a fatal error a poll reported.
    private static func serveGroupWhileFull(
        handle: RDKafkaHandle,
        shared: Shared,
        buffer: MessageBuffer,
        events: AsyncStream<Event>.Continuation,
        logger: Logger,
        overflow: inout [KafkaConsumerMessage],
        topicNames: inout SmallTable<OpaquePointer, String>
    ) -> KafkaError? {
        let rk = handle.pointer
        // Every turn: a partition assigned or resumed by the application meanwhile is paused too.
        let fetching = shared.state.withLock { $0.assignment.subtracting($0.paused) }
        if !fetching.isEmpty {
            let list = RDKafkaTopicPartitionList(Array(fetching))
            if rd_kafka_pause_partitions(rk, list.pointer) == RD_KAFKA_RESP_ERR_NO_ERROR {
                shared.state.withLock { $0.pausedWhileFull.formUnion(fetching) }
            }
        }
        // What was fetched before the pause is taken at once, up to a batch a turn: a rebalance waits behind it.
        var timeout: Int32 = 100
        for _ in 0..<1_000 {
            let message = rd_kafka_consumer_poll(rk, timeout)
            defer { if let message { rd_kafka_message_destroy(message) } }
            // A revocation served inside the poll makes what was kept before it for those partitions stale.
            let (revoked, paused, generations) = shared.state.withLock { state in
                defer { state.revokedDuringPoll = [] }
                return (state.revokedDuringPoll, state.paused, state.generations)
            }
            if !revoked.isEmpty { overflow.removeAll { revoked.contains($0.topicPartition) } }
            guard let message else { return nil }
            if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                if let fatal = Self.report(message, handle: handle, events: events, logger: logger) { return fatal }
                continue
            }
            var generation = GenerationLookup(generations: generations)
            let record = Self.convert(message, topicNames: &topicNames, generation: &generation)
            Self.advancePositions(over: [record], in: shared)
            shared.recordsFetched.add(1, ordering: .relaxed)
            if paused.contains(record.topicPartition) {
                buffer.hold([record])
            } else {
                overflow.append(record)
            }
            timeout = 0
        }
        return nil
    }

    /// Once there is room after the buffer was full: the records polled meanwhile are handed over (or held back, for
    /// partitions the application paused since), and the partitions paused for the full buffer fetch again from
    /// after the last record kept, except those the application paused.
    private static func resumeAfterFull(
        _ rk: OpaquePointer,
        shared: Shared,
        buffer: MessageBuffer,
        logger: Logger,
        overflow: inout [KafkaConsumerMessage]
    ) {
        guard !overflow.isEmpty || shared.state.withLock({ !$0.pausedWhileFull.isEmpty }) else { return }
        let (resumed, positions, paused) = shared.state.withLock { state in
            let resumed = state.pausedWhileFull.intersection(state.assignment).subtracting(state.paused)
            state.pausedWhileFull = []
            let positions = resumed.compactMap { partition in
                state.positions[partition].map { KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: $0) }
            }
            return (resumed, positions, state.paused)
        }
        if !overflow.isEmpty {
            buffer.hold(overflow.filter { paused.contains($0.topicPartition) })
            buffer.push(overflow.filter { !paused.contains($0.topicPartition) })
            overflow = []
        }
        let err = resumeInLibrdkafka(rk, resumed)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("Resume after a full buffer failed", metadata: [KafkaLoggingKeys.errorName: "\(String(cString: rd_kafka_err2name(err)))"])
            return
        }
        // As after the application's resume: librdkafka 2.0 would otherwise restart from an older position.
        reposition(rk, at: positions, logger: logger, after: "a full buffer")
    }

    /// Moves the fetch positions of resumed partitions to `positions` (after the last records handed over), without
    /// waiting; a refusal is logged, naming what the resume came `after`.
    private static func reposition(_ rk: OpaquePointer, at positions: [KafkaTopicPartitionOffset], logger: Logger, after what: String) {
        guard !positions.isEmpty else { return }
        let list = RDKafkaTopicPartitionList(positions)
        if let error = rd_kafka_seek_partitions(rk, list.pointer, 0) {
            logger.warning("Repositioning after \(what) failed", metadata: ["error": "\(KafkaError.consuming(.seekFailed, error))"])
        }
    }

    /// Sets the position of each partition in `messages` (polled, in order) to after its last one there.
    private static func advancePositions(over messages: [KafkaConsumerMessage], in shared: Shared) {
        shared.state.withLock { state in
            // Polled records come in runs of one partition; the last of each run is the new position.
            var index = 0
            while index < messages.count {
                var last = index
                while last + 1 < messages.count, messages[last + 1].partition == messages[index].partition,
                    messages[last + 1].topic == messages[index].topic
                {
                    last += 1
                }
                state.positions[messages[last].topicPartition] = messages[last].offset + 1
                index = last + 1
            }
        }
    }

    /// Destroys the messages of `partitions` among the first `count` of `raw`, keeping the order of the others.
    /// Returns the new count.
    private static func dropMessages(
        of partitions: Set<KafkaTopicPartition>,
        from raw: inout [UnsafeMutablePointer<rd_kafka_message_t>?],
        count: Int
    ) -> Int {
        var names = SmallTable<OpaquePointer, String>()
        var kept = 0
        for index in 0..<count {
            guard let message = raw[index] else { continue }
            let partition = KafkaTopicPartition(topic: topicName(message.pointee.rkt, cache: &names), partition: message.pointee.partition)
            if partitions.contains(partition) {
                rd_kafka_message_destroy(message)
            } else {
                raw[kept] = message
                kept += 1
            }
        }
        return kept
    }

    /// Copies a librdkafka message into a Swift value.
    private static func convert(
        _ message: UnsafeMutablePointer<rd_kafka_message_t>,
        topicNames: inout SmallTable<OpaquePointer, String>,
        generation: inout GenerationLookup
    ) -> KafkaConsumerMessage {
        let value = message.pointee
        let topic = topicName(value.rkt, cache: &topicNames)
        return KafkaConsumerMessage(
            topic: topic,
            partition: value.partition,
            offset: value.offset,
            key: RDKafkaMessage.key(of: message),
            value: RDKafkaMessage.value(of: message),
            headers: RDKafkaMessage.headers(of: message),
            timestamp: RDKafkaMessage.timestamp(of: message),
            assignmentGeneration: generation.of(topic: value.rkt, named: topic, partition: value.partition)
        )
    }

    /// The assignment generations of one poll's records, looked up once per run of records of one partition (polled
    /// records come in such runs).
    struct GenerationLookup {
        let generations: [KafkaTopicPartition: Int]
        private var last: (topic: OpaquePointer?, partition: Int32, generation: Int)?

        init(generations: [KafkaTopicPartition: Int]) {
            self.generations = generations
        }

        /// The generation of `partition` of the topic whose handle is `topic`, named `name`.
        mutating func of(topic: OpaquePointer?, named name: String, partition: Int32) -> Int {
            if let last, last.topic == topic, last.partition == partition { return last.generation }
            let generation = generations[KafkaTopicPartition(topic: name, partition: partition)] ?? 0
            last = (topic, partition, generation)
            return generation
        }
    }

    /// Reports an error message from the fetch path; returns the error when it is fatal for the consumer.
    private static func report(
        _ message: UnsafeMutablePointer<rd_kafka_message_t>,
        handle: RDKafkaHandle,
        events: AsyncStream<Event>.Continuation,
        logger: Logger
    ) -> KafkaError? {
        let err = message.pointee.err
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
        let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) }
        let text = message.pointee.payload.map {
            String(decoding: UnsafeRawBufferPointer(start: $0, count: message.pointee.len), as: UTF8.self)
        }
        if err == RD_KAFKA_RESP_ERR__FATAL {
            let fatal = handle.fatalError ?? (err, text ?? "fatal error")
            return KafkaError.librdkafka(.fatal, fatal.code, message: fatal.reason, topic: topic)
        }
        let error = KafkaError.librdkafka(
            .consumerFailed,
            err,
            message: text,
            topic: topic,
            partition: message.pointee.partition >= 0 ? message.pointee.partition : nil
        )
        logger.warning("Consumer error", metadata: ["error": "\(error)"])
        events.yield(.error(error))
        // A subscribed topic that does not exist stops nothing: it may be created later.
        return nil
    }

    /// Applies an assignment change (eager or cooperative) and tells the application.
    private static func rebalance(
        _ rk: OpaquePointer,
        code: rd_kafka_resp_err_t,
        partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
        shared: Shared,
        buffer: MessageBuffer,
        events: AsyncStream<Event>.Continuation,
        commitsOnRevocation: Bool,
        willRevoke: (@Sendable (Set<KafkaTopicPartition>) -> Void)?,
        logger: Logger
    ) {
        let changed = partitions.map { RDKafkaTopicPartitionList.elements(of: $0).map(\.position.topicPartition) } ?? []
        let isCooperative = String(cString: rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE"
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            // A reading starts unpaused (a pause the revocation missed would hold it back for good); while the buffer
            // is full, the poll loop pauses it again.
            resumeInLibrdkafka(rk, shared.state.withLock { state in
                defer { state.pausedWhileFull.subtract(changed) }
                return state.paused.union(state.pausedWhileFull).intersection(changed)
            })
            if isCooperative {
                if let error = rd_kafka_incremental_assign(rk, partitions) { rd_kafka_error_destroy(error) }
            } else {
                rd_kafka_assign(rk, partitions)
            }
            let isReadingStopped = shared.state.withLock { state in
                if !isCooperative { state.assignment = [] }
                state.assignment.formUnion(changed)
                state.paused.subtract(changed)
                for partition in changed { state.generations[partition, default: 0] += 1 }
                return state.isReadingStopped
            }
            // The application reads nothing more (`stopReading()`): a partition given to it now stays paused.
            if isReadingStopped, rd_kafka_pause_partitions(rk, partitions) == RD_KAFKA_RESP_ERR_NO_ERROR {
                shared.state.withLock { $0.paused.formUnion(changed) }
            }
            // Debug: an application logs its own view of the assignment (the pipeline's "Assigned" at info).
            logger.debug("Partitions assigned", metadata: ["partitions": "\(changed.map(\.description).sorted().joined(separator: ","))"])
            events.yield(.partitionsAssigned(changed))
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            buffer.remove(partitions: Set(changed))
            resumeInLibrdkafka(rk, shared.state.withLock { state in
                defer { state.pausedWhileFull.subtract(changed) }
                return state.paused.union(state.pausedWhileFull).intersection(changed)
            })
            // Out of the assignment the application sees from here on, so that nothing new starts for them while
            // the application finishes their work (`willRevoke`) and the commit runs.
            shared.state.withLock { state in
                state.revokedDuringPoll.formUnion(changed)
                state.assignment.subtract(changed)
            }
            willRevoke?(Set(changed))
            // With auto-commit on, commit what the application marked done before the partitions move, so their
            // next owner does not process it again (only stored offsets are committed: nothing unfinished).
            // A lost assignment (session timed out) can no longer be committed to; don't block trying.
            let isLost = rd_kafka_assignment_lost(rk) != 0
            if commitsOnRevocation && !isLost {
                let commitError = rd_kafka_commit(rk, nil, 0)
                if commitError != RD_KAFKA_RESP_ERR_NO_ERROR && commitError != RD_KAFKA_RESP_ERR__NO_OFFSET {
                    // What was done since the last commit is processed again by the partitions' next owner.
                    logger.warning(
                        "Commit on revocation failed: the records done since the last commit will be processed again by the partitions' next owner",
                        metadata: [KafkaLoggingKeys.errorName: "\(String(cString: rd_kafka_err2name(commitError)))"]
                    )
                }
            }
            if isCooperative {
                if let error = rd_kafka_incremental_unassign(rk, partitions) { rd_kafka_error_destroy(error) }
            } else {
                rd_kafka_assign(rk, nil)
            }
            shared.state.withLock { state in
                state.paused.subtract(changed)
                for partition in changed { state.positions[partition] = nil }
            }
            logger.debug("Partitions revoked", metadata: ["partitions": "\(changed.map(\.description).sorted().joined(separator: ","))"])
            events.yield(isLost ? .partitionsLost(changed) : .partitionsRevoked(changed))
        default:
            logger.warning("Rebalance failed: \(String(cString: rd_kafka_err2name(code)))")
            resumeInLibrdkafka(rk, shared.state.withLock { state in
                defer { state.pausedWhileFull = [] }
                return state.paused.union(state.pausedWhileFull)
            })
            let previous = shared.state.withLock { state in
                defer {
                    state.revokedDuringPoll.formUnion(state.assignment)
                    state.assignment = []
                }
                return Array(state.assignment)
            }
            buffer.remove(partitions: Set(previous))
            willRevoke?(Set(previous))
            rd_kafka_assign(rk, nil)
            shared.state.withLock { state in
                state.positions = [:]
                state.paused = []
            }
            events.yield(.partitionsRevoked(previous))
            events.yield(.error(.librdkafka(.consumerFailed, code)))
        }
    }
}

extension KafkaConsumer {
    /// Lifts librdkafka's own pause of `partitions` (an application's resume, or a resume after a full buffer); and
    /// of partitions that leave the assignment: librdkafka 2.0 keeps an application's pause across unassign and
    /// assign, so a paused partition given back later would never be fetched again, while this consumer (which
    /// forgets the pause with the partition) counts it as read. Returns librdkafka's answer.
    @discardableResult
    fileprivate static func resumeInLibrdkafka(_ rk: OpaquePointer, _ partitions: Set<KafkaTopicPartition>) -> rd_kafka_resp_err_t {
        guard !partitions.isEmpty else { return RD_KAFKA_RESP_ERR_NO_ERROR }
        let list = RDKafkaTopicPartitionList(Array(partitions))
        return rd_kafka_resume_partitions(rk, list.pointer)
    }
}

/// Logical offsets understood by ``KafkaConsumer/assign(_:)`` and ``KafkaConsumer/seek(_:timeout:)``.
public enum KafkaOffset {
    /// The first stored record of the partition.
    public static let beginning: Int64 = Int64(RD_KAFKA_OFFSET_BEGINNING)
    /// The end of the partition: only records produced from now on.
    public static let end: Int64 = Int64(RD_KAFKA_OFFSET_END)
    /// The group's committed offset.
    public static let stored: Int64 = Int64(RD_KAFKA_OFFSET_STORED)
    /// No offset (for example nothing committed yet).
    public static let invalid: Int64 = Int64(RD_KAFKA_OFFSET_INVALID)
}
