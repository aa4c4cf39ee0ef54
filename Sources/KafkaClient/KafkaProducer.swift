import CRdKafka
import Foundation
public import Logging
import Synchronization

/// Produces records to Kafka and reports, for each one, where the cluster stored it or why it could not.
///
/// Records are queued with ``produce(_:onDelivery:)`` without waiting, or sent with ``send(_:)``, which waits
/// for the acknowledgement. Delivery reports are served by a background thread of the producer, never by the
/// cooperative pool. Idempotence is on by default. ``close(timeout:)`` flushes what is queued; call it before
/// releasing the producer.
///
/// ```swift
/// let producer = try KafkaProducer(configuration: .init(bootstrapServers: ["localhost:9092"]), logger: logger)
/// let report = try await producer.send(KafkaProducerRecord(topic: "push.fcm", key: key, value: payload))
/// await producer.close()
/// ```
public final class KafkaProducer: Sendable {
    /// What the caller is told when a record's fate is known.
    public typealias DeliveryHandler = @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void

    /// The receiver of a record queued with a closure.
    private final class ClosureReceiver: KafkaDeliveryReceiver, @unchecked Sendable {
        let handler: DeliveryHandler

        init(_ handler: @escaping DeliveryHandler) {
            self.handler = handler
        }

        override func deliveryReported(_ result: Result<KafkaDeliveryReport, KafkaError>) {
            handler(result)
        }
    }

    private struct State {
        var fatalError: KafkaError?
        var lastBrokerError: String?
    }

    /// The state shared with the delivery-report thread (which must not retain the producer itself).
    private final class Shared: Sendable {
        let state = Mutex(State())
        /// Set once records are refused (the producer closed, or failed: then with the state's error); checked without
        /// the lock per record.
        let isRefusing = Atomic<Bool>(false)
        /// Records handed to librdkafka whose delivery report has not been served yet.
        let outstanding = Atomic<Int>(0)
    }

    private let handle: RDKafkaHandle
    private let shared: Shared
    private let configuration: KafkaProducerConfiguration
    private let logger: Logger
    private let pollThread: PollThread

    /// Creates a producer and starts its delivery-report thread.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` when librdkafka refuses a property.
    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        var logger = logger
        logger[metadataKey: KafkaLoggingKeys.clientKind] = "producer"
        let callbacks = RDKafkaCallbacks(logger: logger)
        let handle = try RDKafkaHandle(
            type: RD_KAFKA_PRODUCER,
            properties: configuration.librdkafkaProperties,
            callbacks: callbacks
        ) { conf in
            rd_kafka_conf_set_events(conf, Int32(RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR))
        }
        let shared = Shared()
        self.handle = handle
        self.shared = shared
        self.configuration = configuration
        self.logger = logger
        let threadLogger = logger
        self.pollThread = PollThread(name: "kafka-producer-poll") { thread in
            Self.servePollLoop(handle: handle, shared: shared, logger: threadLogger, thread: thread)
        }
    }

    deinit {
        pollThread.requestStop()
    }

    // MARK: - Sending

    /// Queues a record for sending and returns at once; `onDelivery` is called exactly once, from the producer's
    /// background thread, with the record's partition and offset or the reason it was not delivered.
    ///
    /// - Throws: ``KafkaError`` when the record cannot be queued (local queue full — retriable —, unknown
    ///   partition, too large, producer closed or failed). `onDelivery` is not called then.
    public func produce(_ record: KafkaProducerRecord, onDelivery: @escaping DeliveryHandler) throws(KafkaError) {
        try produce(record, reportingTo: ClosureReceiver(onDelivery))
    }

    /// Queues a record for sending and returns at once; `receiver` is told exactly once, from the producer's
    /// background thread, with the record's partition and offset or the reason it was not delivered.
    ///
    /// The producer holds `receiver` itself while the record is in flight (librdkafka carries it as the record's
    /// opaque): give it what handling the report needs, and nothing per record is allocated besides it.
    ///
    /// - Throws: as ``produce(_:onDelivery:)``; `receiver` is not told then.
    public func produce(_ record: KafkaProducerRecord, reportingTo receiver: KafkaDeliveryReceiver) throws(KafkaError) {
        // Counted before the check, both sequentially consistent, as `close` sets the flag before it reads the
        // count: either this sees the producer closing, or `close` sees this record and waits for its report.
        shared.outstanding.add(1, ordering: .sequentiallyConsistent)
        if shared.isRefusing.load(ordering: .sequentiallyConsistent) {
            shared.outstanding.subtract(1, ordering: .relaxed)
            throw shared.state.withLock { state in
                state.fatalError ?? KafkaError(code: .closed, message: "the producer is closed", topic: record.topic)
            }
        }
        let pending = Unmanaged.passRetained(receiver)
        if let error = enqueue(record, opaque: pending.toOpaque()) {
            // Not queued: librdkafka will not report it, and the handler is not called.
            pending.release()
            shared.outstanding.subtract(1, ordering: .relaxed)
            throw error
        }
    }

    /// Sends a record and waits until the cluster acknowledged it.
    ///
    /// A full local queue is waited out (up to the configured message timeout, or until the task is cancelled when
    /// there is none) rather than reported.
    ///
    /// - Returns: where the record was stored.
    /// - Throws: ``KafkaError`` with code ``KafkaError/Code/deliveryFailed`` (for example `_MSG_TIMED_OUT` when
    ///   no broker took it within `message.timeout.ms`), ``KafkaError/Code/enqueueFailed`` (the queue stayed full,
    ///   or the task was cancelled while waiting for room).
    public func send(_ record: KafkaProducerRecord) async throws(KafkaError) -> KafkaDeliveryReport {
        let deadline = queueFullDeadline()
        while true {
            let result: Result<KafkaDeliveryReport, KafkaError> = await withCheckedContinuation { continuation in
                do throws(KafkaError) {
                    try produce(record) { continuation.resume(returning: $0) }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            switch result {
            case .failure(let error) where error.isQueueFull && (deadline.map { ContinuousClock.now < $0 } ?? true) && !Task.isCancelled:
                try? await Task.sleep(for: .milliseconds(1))
            default:
                return try result.get()
            }
        }
    }

    /// Sends many records at once and waits for all their acknowledgements, without waiting for one before
    /// queuing the next. Records are queued in the order given, so records for one partition keep that order.
    ///
    /// - Returns: one result per record, in the order given.
    public func send(contentsOf records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        let collector = DeliveryCollector(count: records.count)
        for (index, record) in records.enumerated() {
            let deadline = queueFullDeadline()
            while true {
                do throws(KafkaError) {
                    try produce(record) { collector.record($0, at: index) }
                    break
                } catch where error.isQueueFull && (deadline.map { ContinuousClock.now < $0 } ?? true) && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(1))
                } catch {
                    collector.record(.failure(error), at: index)
                    break
                }
            }
        }
        return await collector.results()
    }

    /// Until when a full local queue is waited out: the message timeout from now, or no end when it is never.
    private func queueFullDeadline() -> ContinuousClock.Instant? {
        configuration.messageTimeout > .zero ? ContinuousClock.now + configuration.messageTimeout : nil
    }

    /// The number of records queued or in flight whose delivery report has not arrived yet.
    public var pendingCount: Int { shared.outstanding.load(ordering: .sequentiallyConsistent) }

    /// Waits until every queued record has a delivery report, or `timeout` passes.
    ///
    /// - Throws: ``KafkaError/Code/deliveryFailed`` (`_TIMED_OUT`) when records are still outstanding.
    public func flush(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = self.handle
        // One deadline for both waits: `timeout` bounds the whole flush.
        let deadline = ContinuousClock.now + timeout
        let err = await BlockingCalls.run { rd_kafka_flush(handle.pointer, timeout.cMilliseconds).rawValue }
        let code = rd_kafka_resp_err_t(rawValue: err)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            // rd_kafka_flush polls the main queue itself only without the event API; wait on our own count too.
            while pendingCount > 0 {
                if ContinuousClock.now >= deadline {
                    throw KafkaError(
                        code: .deliveryFailed,
                        message: "\(pendingCount) record(s) still unacknowledged after \(timeout)",
                        librdkafkaName: String(cString: rd_kafka_err2name(code))
                    )
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return
        }
        // Reports of the last records may still be on their way to our delivery thread.
        while pendingCount > 0, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
    }

    /// Flushes queued records (waiting at most `timeout`), stops the background thread and refuses further sends.
    /// Records still unacknowledged then are purged from librdkafka and reported as failed with
    /// ``KafkaError/Code/closed``.
    public func close(timeout: Duration = .seconds(30)) async {
        do throws(KafkaError) {
            try await flush(timeout: timeout)
        } catch {
            logger.warning("Producer closed with unacknowledged records", metadata: ["error": "\(error)"])
        }
        shared.isRefusing.store(true, ordering: .sequentiallyConsistent)
        // Whatever is left (or was queued while closing) is purged; its reports, served by the delivery thread,
        // call the handlers with the purge's error. Repeated until none is left: a record can be queued by a
        // `produce` that passed the closed check just before it was set. Non-blocking: the queues librdkafka's own
        // threads hold are purged by those threads, at once.
        let deadline = ContinuousClock.now + .seconds(5)
        while pendingCount > 0, ContinuousClock.now < deadline {
            _ = rd_kafka_purge(handle.pointer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT | RD_KAFKA_PURGE_F_NON_BLOCKING)
            try? await Task.sleep(for: .milliseconds(5))
        }
        if pendingCount > 0 {
            logger.error("Producer closed with records librdkafka never reported", metadata: ["records": "\(pendingCount)"])
        }
        await pollThread.stop()
        handle.callbacks.flushRepeatedLines()
    }

    // MARK: - librdkafka

    private func enqueue(_ record: KafkaProducerRecord, opaque: UnsafeMutableRawPointer) -> KafkaError? {
        let timestamp = record.timestamp.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? 0
        let key = record.key ?? []
        let value = record.value ?? []
        let hasKey = record.key != nil
        let hasValue = record.value != nil
        let partition = record.partition ?? RD_KAFKA_PARTITION_UA
        let headers = record.headers
        let topicHandle = handle.topicHandle(record.topic)
        let client = handle.pointer
        // The closures below use these locals, not `record` or `self`: capturing the record copied all of it (a
        // reference count per field) for each of them, and capturing the producer counted a reference to it from
        // every thread that produces.
        // Every argument lives on the stack (or in one temporary buffer) for the call: no array per record.
        let error: OpaquePointer? = record.topic.withCString { topic in
            key.withUnsafeBytes { keyBytes in
                value.withUnsafeBytes { valueBytes in
                    Self.withHeaderStorage(headers) { headerBytes in
                        withUnsafeTemporaryAllocation(of: rd_kafka_vu_t.self, capacity: 8) { values in
                            var count = 0
                            func add(_ type: rd_kafka_vtype_t, _ fill: (inout rd_kafka_vu_t) -> Void) {
                                var entry = rd_kafka_vu_t()
                                entry.vtype = type
                                fill(&entry)
                                values.initializeElement(at: count, to: entry)
                                count += 1
                            }
                            if let topicHandle {
                                add(RD_KAFKA_VTYPE_RKT) { $0.u.rkt = topicHandle }
                            } else {
                                add(RD_KAFKA_VTYPE_TOPIC) { $0.u.cstr = topic }
                            }
                            add(RD_KAFKA_VTYPE_PARTITION) { $0.u.i32 = partition }
                            add(RD_KAFKA_VTYPE_MSGFLAGS) { $0.u.i = RD_KAFKA_MSG_F_COPY }
                            add(RD_KAFKA_VTYPE_OPAQUE) { $0.u.ptr = opaque }
                            add(RD_KAFKA_VTYPE_TIMESTAMP) { $0.u.i64 = timestamp }
                            if hasValue {
                                add(RD_KAFKA_VTYPE_VALUE) {
                                    $0.u.mem.ptr = UnsafeMutableRawPointer(mutating: valueBytes.baseAddress)
                                    $0.u.mem.size = valueBytes.count
                                }
                            }
                            if hasKey {
                                add(RD_KAFKA_VTYPE_KEY) {
                                    $0.u.mem.ptr = UnsafeMutableRawPointer(mutating: keyBytes.baseAddress)
                                    $0.u.mem.size = keyBytes.count
                                }
                            }
                            // Headers: in a list of our own, passed whole. From one `VTYPE_HEADER` per header,
                            // librdkafka 2.0.2's produceva builds a list that it frees twice when the partitioner
                            // refuses the record (an unknown partition or topic, a topic not authorized: a crash;
                            // confluentinc/librdkafka#4628, fixed in 2.12.0). A list of our own stays ours when the
                            // call fails, and is destroyed here then; librdkafka owns it once the record is queued.
                            var headerList: OpaquePointer?
                            if !headers.isEmpty, let list = rd_kafka_headers_new(headers.count) {
                                // A NUL-terminated name, then the value, one after the other in the storage.
                                var offset = 0
                                for header in headers {
                                    let nameLength = header.key.utf8.count
                                    let valueByteCount = header.valueByteCount
                                    let valueLength = valueByteCount ?? 0
                                    let name = headerBytes.baseAddress.map { ($0 + offset).assumingMemoryBound(to: CChar.self) }
                                    let valueStart = offset + nameLength + 1
                                    let value = valueByteCount == nil ? nil : headerBytes.baseAddress.map { UnsafeRawPointer($0 + valueStart) }
                                    // Copies both; fails only for a list made read-only, which this one is not.
                                    _ = rd_kafka_header_add(list, name, nameLength, value, valueLength)
                                    offset = valueStart + valueLength
                                }
                                add(RD_KAFKA_VTYPE_HEADERS) { $0.u.headers = list }
                                headerList = list
                            }
                            defer { values.baseAddress?.deinitialize(count: count) }
                            let error = rd_kafka_produceva(client, values.baseAddress, count)
                            if error != nil, let headerList { rd_kafka_headers_destroy(headerList) }
                            return error
                        }
                    }
                }
            }
        }
        guard let error else { return nil }
        var result = KafkaError.consuming(.enqueueFailed, error, topic: record.topic)
        result.partition = record.partition
        if result.librdkafkaName == "_FATAL", let fatal = handle.fatalError {
            // Refused because the producer failed for good (before its error event was served): say why.
            result = KafkaError.librdkafka(.fatal, fatal.code, message: fatal.reason, topic: record.topic, partition: record.partition)
        }
        return result
    }

    /// For tests: raises a fatal error as the idempotent producer gets one (`OUT_OF_ORDER_SEQUENCE_NUMBER`).
    func simulateFatalError() -> Bool {
        handle.simulateFatalError(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason: "simulated idempotence failure")
    }

    /// The error the producer failed with for good, if it did: it then refuses every record, and records it still
    /// held are reported failed with it (``KafkaError/Code/fatal``). A new producer is needed to go on.
    public var fatalFailure: KafkaError? {
        shared.state.withLock { $0.fatalError }
    }

    /// Calls `body` with the record's headers laid out for `rd_kafka_produceva`: each name NUL-terminated, then its
    /// value, one after the other, in a temporary buffer (on the stack when small), not an array per record.
    private static func withHeaderStorage<Result>(
        _ headers: [KafkaHeader],
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        guard !headers.isEmpty else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        var size = 0
        for header in headers { size += header.key.utf8.count + 1 + (header.valueByteCount ?? 0) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { storage in
            var offset = 0
            for header in headers {
                offset = storage[offset...].initialize(fromContentsOf: header.key.utf8)
                storage.initializeElement(at: offset, to: 0)
                offset += 1
                offset = header.initializeValue(in: storage, at: offset)
            }
            precondition(offset == size, "header storage laid out \(offset) of \(size) bytes")
            defer { storage.deinitialize() }
            return body(UnsafeRawBufferPointer(storage))
        }
    }

    /// What a delivery report says about its record: where it was stored, or why not (a record purged by
    /// ``close(timeout:)`` fails with ``KafkaError/Code/closed``; one librdkafka purged after a fatal error, with
    /// ``KafkaError/Code/fatal`` and that error).
    private static func deliveryResult(
        of message: UnsafePointer<rd_kafka_message_t>,
        topicNames: inout SmallTable<OpaquePointer, String>,
        handle: RDKafkaHandle,
        shared: Shared
    ) -> Result<KafkaDeliveryReport, KafkaError> {
        let topic = topicName(message.pointee.rkt, cache: &topicNames)
        let err = message.pointee.err
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else {
            return .success(KafkaDeliveryReport(topic: topic, partition: message.pointee.partition, offset: message.pointee.offset))
        }
        let partition = message.pointee.partition == RD_KAFKA_PARTITION_UA ? nil : message.pointee.partition
        if err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT {
            // librdkafka purges the queues itself on a fatal error, before its error event may have been served.
            if let fatal = handle.fatalError {
                return .failure(
                    KafkaError.librdkafka(
                        .fatal,
                        fatal.code,
                        message: "the producer hit a fatal error before the record was acknowledged: \(fatal.reason)",
                        topic: topic,
                        partition: partition
                    )
                )
            }
            return .failure(
                KafkaError.librdkafka(.closed, err, message: "the producer closed before the record was acknowledged", topic: topic, partition: partition)
            )
        }
        var error = KafkaError.librdkafka(.deliveryFailed, err, topic: topic, partition: partition)
        if let lastBrokerError = shared.state.withLock({ $0.lastBrokerError }) {
            error.message += " (last broker error: \(lastBrokerError))"
        }
        return .failure(error)
    }

    /// The record a failed delivery report is about, as librdkafka still holds it: its topic, the partition it was
    /// given (`nil` if none yet), key, value and headers. Not its timestamp: librdkafka reports none for a failed
    /// record.
    private static func record(of message: UnsafePointer<rd_kafka_message_t>, topicNames: inout SmallTable<OpaquePointer, String>) -> KafkaProducerRecord {
        KafkaProducerRecord(
            topic: topicName(message.pointee.rkt, cache: &topicNames),
            partition: message.pointee.partition == RD_KAFKA_PARTITION_UA ? nil : message.pointee.partition,
            key: RDKafkaMessage.key(of: message),
            value: RDKafkaMessage.value(of: message),
            headers: RDKafkaMessage.headers(of: message)
        )
    }

    /// The delivery-report loop, run on the producer's own thread.
    private static func servePollLoop(handle: RDKafkaHandle, shared: Shared, logger: Logger, thread: PollThread) {
        guard let queue = rd_kafka_queue_get_main(handle.pointer) else { return }
        defer { rd_kafka_queue_destroy(queue) }
        var messages = [UnsafePointer<rd_kafka_message_t>?](repeating: nil, count: 1_000)
        var topicNames = SmallTable<OpaquePointer, String>()
        while !thread.isStopRequested {
            guard let event = rd_kafka_queue_poll(queue, 100) else { continue }
            defer { rd_kafka_event_destroy(event) }
            switch rd_kafka_event_type(event) {
            case RD_KAFKA_EVENT_DR:
                while true {
                    let count = messages.withUnsafeMutableBufferPointer { buffer in
                        rd_kafka_event_message_array(event, buffer.baseAddress, buffer.count)
                    }
                    if count == 0 { break }
                    for index in 0..<count {
                        guard let message = messages[index], let opaque = message.pointee._private else { continue }
                        // The reference `produce` retained for this record, taken back: released after the call.
                        let receiver = Unmanaged<KafkaDeliveryReceiver>.fromOpaque(opaque).takeRetainedValue()
                        let result = deliveryResult(of: message, topicNames: &topicNames, handle: handle, shared: shared)
                        switch result {
                        case .success:
                            receiver.deliveryReported(result)
                        case .failure(let error):
                            receiver.deliveryFailed(error, record: record(of: message, topicNames: &topicNames))
                        }
                        // Pending until its handler has returned: what the handler queued is counted by then.
                        shared.outstanding.subtract(1, ordering: .releasing)
                    }
                    if count < messages.count { break }
                }
            case RD_KAFKA_EVENT_ERROR:
                let code = rd_kafka_event_error(event)
                let reason = String(cString: rd_kafka_event_error_string(event))
                if rd_kafka_event_error_is_fatal(event) != 0 {
                    let fatal = handle.fatalError ?? (code, reason)
                    let error = KafkaError.librdkafka(.fatal, fatal.code, message: fatal.reason)
                    logger.error("Producer hit a fatal error", metadata: ["error": "\(error)"])
                    shared.state.withLock { state in
                        state.fatalError = error
                        shared.isRefusing.store(true, ordering: .releasing)
                    }
                } else {
                    logger.warning(
                        "Producer error: \(reason)",
                        metadata: [KafkaLoggingKeys.errorName: "\(String(cString: rd_kafka_err2name(code)))"]
                    )
                    shared.state.withLock { $0.lastBrokerError = reason }
                }
            default:
                break
            }
        }
    }
}

/// Receives the delivery report of one record queued with ``KafkaProducer/produce(_:reportingTo:)``.
///
/// Subclass it with what handling the report needs (what to do when the record is stored; a failed record comes
/// back whole, for a retry): the producer holds the object itself while the record is in flight, so a record costs
/// one allocation, where a closure costs its context and a box for it. Subclasses must be safe to send: the report
/// arrives on the producer's thread.
open class KafkaDeliveryReceiver: @unchecked Sendable {
    /// Creates a receiver; a subclass's initializer sets what its handling needs.
    public init() {}

    /// Called exactly once per record queued, from the producer's delivery thread, when it was stored (or, unless
    /// ``deliveryFailed(_:record:)`` is overridden, when it was not); must not block.
    open func deliveryReported(_ result: Result<KafkaDeliveryReport, KafkaError>) {}

    /// Called instead of ``deliveryReported(_:)`` when the record was not delivered, with the record as librdkafka
    /// still held it: topic, the partition it was given (`nil` if none yet), key, value and headers. Enough to send
    /// it again, so a receiver need not keep a copy while it is in flight; only an explicit timestamp is not handed
    /// back (librdkafka reports none for a failed record). By default, reports the failure to
    /// ``deliveryReported(_:)``.
    open func deliveryFailed(_ error: KafkaError, record: KafkaProducerRecord) {
        deliveryReported(.failure(error))
    }
}

/// Gathers the delivery results of a batch of records and hands them over once all are known.
private final class DeliveryCollector: Sendable {
    private struct State {
        var results: [Result<KafkaDeliveryReport, KafkaError>?]
        var remaining: Int
        var waiter: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
    }

    func record(_ result: Result<KafkaDeliveryReport, KafkaError>, at index: Int) {
        let finished: (CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>, [Result<KafkaDeliveryReport, KafkaError>])? =
            state.withLock { state in
                state.results[index] = result
                state.remaining -= 1
                guard state.remaining == 0, let waiter = state.waiter else { return nil }
                state.waiter = nil
                return (waiter, state.results.compactMap { $0 })
            }
        if let (waiter, results) = finished { waiter.resume(returning: results) }
    }

    func results() async -> [Result<KafkaDeliveryReport, KafkaError>] {
        await withCheckedContinuation { continuation in
            let ready: [Result<KafkaDeliveryReport, KafkaError>]? = state.withLock { state in
                if state.remaining == 0 { return state.results.compactMap { $0 } }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// The name of a topic handle, cached per handle so delivery reports do not allocate a string each.
func topicName(_ topic: OpaquePointer?, cache: inout SmallTable<OpaquePointer, String>) -> String {
    guard let topic else { return "" }
    if let name = cache[topic] { return name }
    let name = String(cString: rd_kafka_topic_name(topic))
    cache.add(name, for: topic)
    return name
}

extension KafkaError {
    /// librdkafka's local queue was full; the record may be queued again shortly.
    var isQueueFull: Bool { librdkafkaName == "_QUEUE_FULL" }
}
