import CRdKafka
public import Foundation

extension KafkaConsumer {
    /// How ``KafkaConsumer/offsets(forTimestamp:in:strategy:timeout:)`` finds an offset.
    public enum OffsetLookupStrategy: Sendable, Hashable {
        /// Ask the broker (ListOffsets by time), check its answer against the records on either side of it, and
        /// search the records if the answer is wrong. The default: correct on any broker, one request on most.
        case automatic
        /// Trust the broker's answer.
        case broker
        /// Binary-search the record timestamps, ignoring the broker's time index.
        case search
    }

    /// For each partition, the offset of the first record whose timestamp is at or after `timestamp`, or the
    /// partition's end offset when there is none. Seek or assign to the result to start reading there. (Where the
    /// offsets just before that record hold none, transaction markers or aborted records, the result may be the
    /// first of them: reading from there gives the same records.)
    ///
    /// Some brokers (librdkafka's mock cluster among them) answer a lookup by time with the end offset;
    /// ``OffsetLookupStrategy/automatic`` notices and falls back to a binary search over record timestamps,
    /// which assumes timestamps do not decrease within a partition (true for producer-stamped streams written in
    /// order and for log-append time).
    ///
    /// - Throws: ``KafkaError/Code/offsetLookupFailed`` naming the partition; ``KafkaError/Code/cancelled`` when the
    ///   task is cancelled first (the look-up is abandoned).
    public func offsets(
        forTimestamp timestamp: Date,
        in partitions: [KafkaTopicPartition],
        strategy: OffsetLookupStrategy = .automatic,
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [KafkaTopicPartitionOffset] {
        let handle = self.handle
        let target = Int64((timestamp.timeIntervalSince1970 * 1000).rounded(.up))
        let logger = self.logger
        let frozenProperties = recordProbeProperties
        // Looked up first, each within `timeout`: librdkafka 2.0.2's watermark query waits for its answer with no
        // deadline (minutes when the brokers are gone), so it is asked where the wait can be given up.
        var watermarks: [KafkaTopicPartition: KafkaWatermarks] = [:]
        for partition in partitions {
            watermarks[partition] = try await self.watermarks(topic: partition.topic, partition: partition.partition, timeout: timeout)
        }
        let marksOf = watermarks
        return try await BlockingCalls.lookUp(
            "the offsets of \(Self.describe(partitions)) at \(timestamp)",
            failingWith: .offsetLookupFailed,
            // A search reads records step by step, each step bounded by `timeout`.
            within: nil
        ) { () throws(KafkaError) in
            var brokerAnswers: [KafkaTopicPartition: Int64] = [:]
            if strategy != .search {
                let list = RDKafkaTopicPartitionList(partitions.map {
                    KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: target)
                })
                let err = rd_kafka_offsets_for_times(handle.pointer, list.pointer, timeout.cMilliseconds)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError.librdkafka(.offsetLookupFailed, err, topic: partitions.first?.topic)
                }
                for element in list.elements {
                    guard element.error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        throw KafkaError.librdkafka(
                            .offsetLookupFailed,
                            element.error,
                            topic: element.position.topic,
                            partition: element.position.partition
                        )
                    }
                    brokerAnswers[element.position.topicPartition] = element.position.offset
                }
                if strategy == .broker {
                    var result: [KafkaTopicPartitionOffset] = []
                    for partition in partitions {
                        var offset = brokerAnswers[partition] ?? -1
                        if offset < 0, let marks = marksOf[partition] { offset = marks.high }
                        result.append(KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: offset))
                    }
                    return result
                }
            }
            let probe = try RecordProbe(properties: frozenProperties, logger: logger, timeout: timeout)
            var result: [KafkaTopicPartitionOffset] = []
            for partition in partitions {
                guard let marks = marksOf[partition] else { continue }
                var offset: Int64
                if let answer = brokerAnswers[partition],
                    try probe.confirms(answer < 0 ? marks.high : answer, target: target, in: partition, watermarks: marks)
                {
                    offset = answer < 0 ? marks.high : answer
                } else {
                    offset = try probe.search(target: target, in: partition, watermarks: marks)
                }
                offset = min(max(offset, marks.low), marks.high)
                result.append(KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: offset))
            }
            return result
        }
    }
}

extension KafkaConsumer {
    /// What is left to read in a range of offsets (``remainder(from:before:in:timeout:)``).
    public enum RangeRemainder: Sendable, Hashable {
        /// A record this consumer can read, at this offset, the range's first.
        case record(offset: Int64)
        /// Nothing this consumer can read, and nothing will come: the range's offsets hold no records, or only
        /// transaction markers and records of aborted transactions.
        case nothingReadable
        /// Nothing readable yet: a transaction still open holds back the offsets from `lastStableOffset` on (a
        /// `read_committed` consumer is given its records once it commits). Ask again later.
        case openTransaction(lastStableOffset: Int64)
    }

    /// What this consumer could still read in `partition` from `offset` up to `end` (excluded), read with a
    /// group-less consumer of the same configuration.
    ///
    /// Offsets that hold no readable record are skipped: transaction markers, records of aborted transactions (with
    /// the default `isolation.level`, `read_committed`), records compaction removed. A range ending at a high
    /// watermark may end in such offsets, so a consumer that waits for a record at `end - 1` can wait forever;
    /// ``RangeRemainder/nothingReadable`` says the range has been read through.
    ///
    /// Each call starts a consumer client of its own (and closes it): meant for the odd check, not for every record.
    ///
    /// - Parameter timeout: the longest each of its two steps (asking the high watermark, reading) waits.
    /// - Throws: ``KafkaError/Code/offsetLookupFailed`` naming the partition, when a step got no answer in time;
    ///   ``KafkaError/Code/cancelled`` when the task is cancelled first (the probe is abandoned).
    public func remainder(
        from offset: Int64,
        before end: Int64,
        in partition: KafkaTopicPartition,
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> RangeRemainder {
        let logger = self.logger
        let properties = recordProbeProperties
        return try await BlockingCalls.lookUp(
            "what is left to read in \(partition) from \(offset)",
            failingWith: .offsetLookupFailed,
            within: timeout * 2
        ) { () throws(KafkaError) in
            let probe = try RecordProbe(properties: properties, logger: logger, timeout: timeout)
            return try probe.remainder(from: offset, before: end, in: partition)
        }
    }

    /// The properties of a ``RecordProbe``: this consumer's, without its group, reporting partition ends and
    /// answering fetches at once.
    private var recordProbeProperties: [(key: String, value: String)] {
        var probeConfiguration = configuration
        probeConfiguration.groupID = nil
        var properties = probeConfiguration.librdkafkaProperties.filter {
            $0.key != "enable.auto.commit" && $0.key != "enable.partition.eof"
        }
        properties.append(("enable.partition.eof", "true"))
        // Each probe reads one record: answer fetches at once instead of waiting to fill them.
        properties.append(("fetch.wait.max.ms", "5"))
        properties.append(("fetch.message.max.bytes", "65536"))
        properties.append(("enable.auto.commit", "false"))
        return properties
    }
}

/// Reads single records at chosen offsets with a group-less consumer of its own, to check or find offsets by time.
/// Used from one blocking thread at a time.
private final class RecordProbe {
    private let handle: RDKafkaHandle
    private let timeout: Duration

    init(properties: [(key: String, value: String)], logger: Logger, timeout: Duration) throws(KafkaError) {
        handle = try RDKafkaHandle(type: RD_KAFKA_CONSUMER, properties: properties, callbacks: RDKafkaCallbacks(logger: logger))
        self.timeout = timeout
    }

    deinit {
        rd_kafka_assign(handle.pointer, nil)
        rd_kafka_consumer_close(handle.pointer)
    }

    /// What one read from an offset gave.
    enum Read {
        /// The first record at or after the offset: its offset and timestamp (ms).
        case record(offset: Int64, timestamp: Int64)
        /// No record from the offset on: the partition ends at `offset`, the high watermark or, for a
        /// `read_committed` consumer, the last stable offset (past any transaction markers and aborted records).
        case end(at: Int64)
    }

    /// Reads the first record at or after `offset`, or the partition's end.
    func read(from offset: Int64, in partition: KafkaTopicPartition) throws(KafkaError) -> Read {
        let list = RDKafkaTopicPartitionList([
            KafkaTopicPartitionOffset(topic: partition.topic, partition: partition.partition, offset: offset)
        ])
        let err = rd_kafka_assign(handle.pointer, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.librdkafka(.offsetLookupFailed, err, topic: partition.topic, partition: partition.partition)
        }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = rd_kafka_consumer_poll(handle.pointer, 100) else { continue }
            defer { rd_kafka_message_destroy(message) }
            let item = message.pointee
            guard item.partition == partition.partition else { continue }
            // librdkafka reports the end with its fetch position, which has moved past markers and aborted records.
            if item.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return .end(at: item.offset) }
            guard item.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError.librdkafka(.offsetLookupFailed, item.err, topic: partition.topic, partition: partition.partition)
            }
            guard item.offset >= offset else { continue }
            var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            let timestamp = rd_kafka_message_timestamp(message, &type)
            return .record(offset: item.offset, timestamp: timestamp)
        }
        throw KafkaError(
            code: .offsetLookupFailed,
            message: "no record read at offset \(offset) within \(timeout)",
            topic: partition.topic,
            partition: partition.partition,
            isRetriable: true
        )
    }

    /// The first record at or after `offset` and before `end`: its offset and timestamp (ms), or `nil` if none.
    func record(atOrAfter offset: Int64, end: Int64, in partition: KafkaTopicPartition) throws(KafkaError) -> (offset: Int64, timestamp: Int64)? {
        guard offset < end, case .record(let found, let timestamp) = try read(from: offset, in: partition), found < end else {
            return nil
        }
        return (found, timestamp)
    }

    /// What is left to read in `offset..<end`.
    func remainder(from offset: Int64, before end: Int64, in partition: KafkaTopicPartition) throws(KafkaError) -> KafkaConsumer.RangeRemainder {
        guard offset < end else { return .nothingReadable }
        // Taken first: offsets below it that were stable once stay so.
        let high = try handle.blockingWatermarks(topic: partition.topic, partition: partition.partition, timeout: timeout).high
        switch try read(from: offset, in: partition) {
        case .record(let found, _):
            return found < end ? .record(offset: found) : .nothingReadable
        case .end(let stable):
            // Short of both the range's end and the high watermark: a transaction still open holds the rest back.
            return stable >= min(end, high) ? .nothingReadable : .openTransaction(lastStableOffset: stable)
        }
    }

    /// Whether `offset` is the first offset with a timestamp at or after `target`.
    func confirms(_ offset: Int64, target: Int64, in partition: KafkaTopicPartition, watermarks: KafkaWatermarks) throws(KafkaError) -> Bool {
        if offset < watermarks.high {
            guard let at = try record(atOrAfter: offset, end: watermarks.high, in: partition), at.timestamp >= target else {
                return false
            }
        }
        if offset > watermarks.low {
            // The last record before it must be older than the target (timestamps do not decrease).
            if let before = try lastRecord(before: offset, from: watermarks.low, in: partition), before.timestamp >= target {
                return false
            }
        }
        return true
    }

    /// The last record this consumer can read before `offset` (and at or after `low`), or `nil` when there is none.
    ///
    /// Usually the record at `offset - 1`: one probe. Transaction markers and aborted records hold none, so after
    /// them it is further back: the distance doubles until a probe finds a record, then the offsets between that
    /// record and the part known to hold none are halved until it is the last.
    func lastRecord(before offset: Int64, from low: Int64, in partition: KafkaTopicPartition) throws(KafkaError) -> (offset: Int64, timestamp: Int64)? {
        // Offsets from `empty` up to `offset` hold nothing readable.
        var empty = offset
        var distance: Int64 = 1
        var last: (offset: Int64, timestamp: Int64)
        while true {
            let from = max(low, offset - distance)
            if let found = try record(atOrAfter: from, end: empty, in: partition) {
                last = found
                break
            }
            guard from > low else { return nil }
            empty = from
            distance *= 2
        }
        while last.offset + 1 < empty {
            let middle = last.offset + 1 + (empty - last.offset - 1) / 2
            if let found = try record(atOrAfter: middle, end: empty, in: partition) {
                last = found
            } else {
                empty = middle
            }
        }
        return last
    }

    /// The first offset whose record's timestamp is at or after `target` (the high watermark when none is).
    func search(target: Int64, in partition: KafkaTopicPartition, watermarks: KafkaWatermarks) throws(KafkaError) -> Int64 {
        var low = watermarks.low
        var high = watermarks.high
        while low < high {
            let middle = low + (high - low) / 2
            guard let found = try record(atOrAfter: middle, end: high, in: partition) else {
                high = middle
                continue
            }
            if found.timestamp >= target {
                high = middle
            } else {
                low = found.offset + 1
            }
        }
        return low
    }
}

import Logging
