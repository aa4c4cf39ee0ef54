import CRdKafka
import Logging
import Synchronization

/// The Swift side of librdkafka's callbacks for one client, reached through the handle's opaque pointer.
///
/// `@unchecked Sendable`: the closures are set once, before the handle is created, and never change; the
/// logger is a value. librdkafka may call ``log(level:facility:message:)`` from its own threads.
final class RDKafkaCallbacks: @unchecked Sendable {
    let logger: Logger
    /// librdkafka's warnings (and worse), limited per kind and minute.
    private let repeatedLines = RepeatedLogLines()
    /// Called on the consumer's poll thread for assignment changes (`rebalance_cb`).
    var rebalance: ((OpaquePointer, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> Void)?
    /// Called on the thread that polls the client for client-level errors (`error_cb`).
    var error: ((rd_kafka_resp_err_t, String) -> Void)?
    /// The last failure of a broker connection (refused, a TLS handshake or SASL authentication that failed), as
    /// librdkafka logs it (facility FAIL, from its own threads, whether or not the client is polled): for the error of
    /// a client that could not reach the cluster.
    let lastConnectionError = Mutex<String?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    func log(level: Int32, facility: String, message: String) {
        if facility == "FAIL" {
            // Without the thread's name in front ("[thrd:ssl://host:9093/bootstrap]: "), which the text repeats.
            let text = message.hasPrefix("[thrd:") ? message.firstRange(of: "]: ").map { String(message[$0.upperBound...]) } ?? message : message
            lastConnectionError.withLock { $0 = text }
        }
        // A broker connection's failures and disconnections (facility FAIL, at any level) are retried by librdkafka
        // itself, and each is also handed to the client's error callback, which logs it at warning ("Consumer
        // error: …", "Producer error: …"): logged here too, every one came twice, and a broker outage's lines doubled.
        let swiftLevel: Logger.Level =
            if facility == "FAIL" {
                .debug
            } else {
                switch level {
                case ...2: .critical
                case 3: .error
                case 4: .warning
                case 5: .notice
                case 6: .info
                default: .debug
                }
            }
        var metadata: Logger.Metadata = [KafkaLoggingKeys.facility: "\(facility)"]
        if swiftLevel >= .warning {
            guard let omitted = repeatedLines.admit(facility, message) else {
                logger.debug("\(message)", metadata: metadata)
                return
            }
            if omitted > 0 { metadata[KafkaLoggingKeys.omittedSinceLastLogged] = "\(omitted)" }
        }
        logger.log(level: swiftLevel, "\(message)", metadata: metadata)
    }

    /// Logs, for each kind of librdkafka warning held back since its last line logged at warning, the last one held
    /// back with the count: called as the client closes, so a count is never left unsaid.
    func flushRepeatedLines() {
        for omitted in repeatedLines.flush() {
            logger.warning(
                "\(omitted.message) (\(omitted.count) like it not logged)",
                metadata: [KafkaLoggingKeys.facility: "\(omitted.facility)", KafkaLoggingKeys.omittedSinceLastLogged: "\(omitted.count)"]
            )
        }
    }
}

/// Owns one librdkafka client (`rd_kafka_t`) and destroys it when released.
///
/// `@unchecked Sendable`: librdkafka documents `rd_kafka_t` as thread-safe for every call this module makes on
/// it from several threads (produce, poll, commit, pause, metadata, offsets). The pointer never escapes the module.
final class RDKafkaHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let callbacks: RDKafkaCallbacks
    /// Topic handles (`rd_kafka_topic_t`) by name, made on first use and destroyed with the client. Producing by
    /// topic *name* makes librdkafka look the topic up under the client's write lock on every record; producing
    /// with a handle only counts a reference.
    private let topicHandles = Mutex(SmallTable<String, OpaquePointer>())

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - type: producer or consumer.
    ///   - properties: librdkafka properties, applied in order.
    ///   - callbacks: the Swift callbacks; their closures must already be set.
    ///   - configure: extra set-up on the configuration object before the client is created.
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` or ``KafkaError/Code/clientCreationFailed``.
    init(
        type: rd_kafka_type_t,
        properties: [(key: String, value: String)],
        callbacks: RDKafkaCallbacks,
        configure: (OpaquePointer) -> Void = { _ in }
    ) throws(KafkaError) {
        let conf = try RDKafkaConfig.make(properties)
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { handle, level, facility, buffer in
            guard let handle, let opaque = rd_kafka_opaque(handle) else { return }
            let callbacks = Unmanaged<RDKafkaCallbacks>.fromOpaque(opaque).takeUnretainedValue()
            callbacks.log(
                level: level,
                facility: facility.map { String(cString: $0) } ?? "",
                message: buffer.map { String(cString: $0) } ?? ""
            )
        }
        if callbacks.error != nil {
            rd_kafka_conf_set_error_cb(conf) { _, code, reason, opaque in
                guard let opaque else { return }
                let callbacks = Unmanaged<RDKafkaCallbacks>.fromOpaque(opaque).takeUnretainedValue()
                callbacks.error?(rd_kafka_resp_err_t(rawValue: code), reason.map { String(cString: $0) } ?? "")
            }
        }
        if callbacks.rebalance != nil {
            rd_kafka_conf_set_rebalance_cb(conf) { handle, code, partitions, opaque in
                guard let handle, let opaque else { return }
                let callbacks = Unmanaged<RDKafkaCallbacks>.fromOpaque(opaque).takeUnretainedValue()
                callbacks.rebalance?(handle, code, partitions)
            }
        }
        configure(conf)
        var errorText = [CChar](repeating: 0, count: 512)
        // On success rd_kafka_new takes ownership of conf; on failure it stays ours.
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: .clientCreationFailed, message: String(decodingCString: errorText))
        }
        self.pointer = handle
        self.callbacks = callbacks
    }

    deinit {
        for topic in topicHandles.withLock({ $0.allValues }) { rd_kafka_topic_destroy(topic) }
        if fatalError == nil {
            rd_kafka_destroy(pointer)
        } else {
            // A consumer with a fatal error refuses to close its group membership (`_FATAL`), and a plain destroy
            // would wait for that close for ever, spinning its main thread and holding the releasing thread.
            rd_kafka_destroy_flags(pointer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE)
        }
    }

    /// The client's fatal error (`rd_kafka_fatal_error`), if it has one: it cannot be used any more.
    var fatalError: (code: rd_kafka_resp_err_t, reason: String)? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(pointer, &text, text.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return (code, String(decodingCString: text))
    }

    /// Raises a fatal error on the client as a broker-side one would (librdkafka's `rd_kafka_test_fatal_error`),
    /// for tests of what follows one.
    func simulateFatalError(_ code: rd_kafka_resp_err_t, reason: String) -> Bool {
        rd_kafka_test_fatal_error(pointer, code, reason) == RD_KAFKA_RESP_ERR_NO_ERROR
    }

    /// The handle of `topic`, made on first use (with the client's default topic configuration) and kept until the
    /// client is destroyed; `nil` when librdkafka refuses the name (producing by name then reports why).
    func topicHandle(_ topic: String) -> OpaquePointer? {
        topicHandles.withLock { handles in
            if let handle = handles[topic] { return handle }
            guard let handle = rd_kafka_topic_new(pointer, topic, nil) else { return nil }
            handles.add(handle, for: topic)
            return handle
        }
    }

    /// The client's `bootstrap.servers` as configured (`""` when it cannot be read), for errors that say which brokers
    /// did not answer.
    var bootstrapServers: String {
        guard let configuration = rd_kafka_conf(pointer) else { return "" }
        var size = 0
        guard rd_kafka_conf_get(configuration, "bootstrap.servers", nil, &size) == RD_KAFKA_CONF_OK, size > 1 else { return "" }
        var buffer = [CChar](repeating: 0, count: size)
        guard rd_kafka_conf_get(configuration, "bootstrap.servers", &buffer, &size) == RD_KAFKA_CONF_OK else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Asks the cluster for metadata, waiting at most `timeout`. Blocks the calling thread.
    ///
    /// - Returns: the partition count of `topic` (when given) or of nothing (0) when only connectivity is checked.
    func blockingMetadata(topic: String?, timeout: Duration) throws(KafkaError) -> [(topic: String, partitions: Int32)] {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(pointer, topic == nil ? 1 : 0, topic.flatMap(topicHandle), &metadata, timeout.cMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            let code: KafkaError.Code =
                err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT
                ? .brokerUnreachable : .metadataFailed
            var error = KafkaError.librdkafka(code, err, topic: topic)
            if code == .brokerUnreachable {
                let servers = bootstrapServers
                // Why is in the last connection error (refused, a TLS handshake or SASL authentication that failed), which
                // was only logged before this.
                let last = callbacks.lastConnectionError.withLock { $0 }.map { " (last connection error: \($0))" } ?? ""
                error.message = "no broker\(servers.isEmpty ? "" : " of \(servers)") answered within \(timeout): \(error.message)\(last)"
            }
            throw error
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        var result: [(topic: String, partitions: Int32)] = []
        for index in 0..<Int(metadata.pointee.topic_cnt) {
            let item = metadata.pointee.topics[index]
            let name = String(cString: item.topic)
            if item.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                throw KafkaError.librdkafka(.metadataFailed, item.err, topic: name)
            }
            result.append((name, item.partition_cnt))
        }
        return result
    }

    /// The low and high watermark of a partition, asked of the broker. Blocks the calling thread.
    func blockingWatermarks(topic: String, partition: Int32, timeout: Duration) throws(KafkaError) -> KafkaWatermarks {
        var low: Int64 = 0
        var high: Int64 = 0
        let err = rd_kafka_query_watermark_offsets(pointer, topic, partition, &low, &high, timeout.cMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.librdkafka(.offsetLookupFailed, err, topic: topic, partition: partition)
        }
        return KafkaWatermarks(low: low, high: high)
    }
}

extension Duration {
    /// Milliseconds as librdkafka's `int` timeout.
    var cMilliseconds: Int32 { Int32(clamping: milliseconds) }

    /// The timeout to pass to `rd_kafka_seek_partitions` for this duration with librdkafka `version` (as
    /// `rd_kafka_version()` gives it). From 1.6.0, where the call came, up to 2.0.2 it waited a thousandth of the
    /// timeout it was given (its remaining milliseconds were taken as microseconds; confluentinc/librdkafka#4230, fixed
    /// in 2.0.3), so those releases are given a thousand times the milliseconds.
    func seekTimeoutMilliseconds(librdkafkaVersion version: Int32) -> Int32 {
        let fixedIn: Int32 = 0x0200_0300
        return version < fixedIn ? Int32(clamping: min(milliseconds, Int64(Int32.max)) * 1000) : cMilliseconds
    }
}
