import CRdKafka

/// Owns an `rd_kafka_topic_partition_list_t` and frees it when released.
///
/// `@unchecked Sendable` is not claimed: a list is built and used on one thread and converted to Swift values
/// before it crosses any boundary.
final class RDKafkaTopicPartitionList {
    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    init(capacity: Int = 1) {
        pointer = rd_kafka_topic_partition_list_new(Int32(clamping: capacity))
    }

    /// Takes ownership of a list librdkafka allocated for us.
    init(owning pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    convenience init(_ partitions: [KafkaTopicPartition]) {
        self.init(capacity: partitions.count)
        for item in partitions {
            rd_kafka_topic_partition_list_add(pointer, item.topic, item.partition)
        }
    }

    convenience init(_ positions: [KafkaTopicPartitionOffset]) {
        self.init(capacity: positions.count)
        for item in positions {
            let element = rd_kafka_topic_partition_list_add(pointer, item.topic, item.partition)
            element?.pointee.offset = item.offset
        }
    }

    /// A list of positions with the metadata to commit with each (copied into memory librdkafka frees with the list).
    convenience init(_ offsets: [KafkaOffsetAndMetadata]) {
        self.init(capacity: offsets.count)
        for item in offsets {
            guard let element = rd_kafka_topic_partition_list_add(pointer, item.position.topic, item.position.partition) else { continue }
            element.pointee.offset = item.position.offset
            let bytes = Array(item.metadata.utf8)
            guard !bytes.isEmpty, let copy = rd_kafka_mem_malloc(nil, bytes.count) else { continue }
            bytes.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            element.pointee.metadata = copy
            element.pointee.metadata_size = bytes.count
        }
    }

    deinit {
        rd_kafka_topic_partition_list_destroy(pointer)
    }

    /// The elements of a list we do not own (for example one passed to a callback).
    static func elements(
        of list: UnsafePointer<rd_kafka_topic_partition_list_t>
    ) -> [(position: KafkaTopicPartitionOffset, error: rd_kafka_resp_err_t)] {
        let count = Int(list.pointee.cnt)
        guard count > 0, let elements = list.pointee.elems else { return [] }
        return (0..<count).map { index in
            let element = elements[index]
            let position = KafkaTopicPartitionOffset(
                topic: String(cString: element.topic),
                partition: element.partition,
                offset: element.offset
            )
            return (position, element.err)
        }
    }

    /// The elements of this list.
    var elements: [(position: KafkaTopicPartitionOffset, error: rd_kafka_resp_err_t)] {
        Self.elements(of: pointer)
    }

    /// The metadata of each element of this list, in order: its bytes as UTF-8 text (invalid bytes replaced), empty
    /// without any.
    var metadata: [String] {
        let count = Int(pointer.pointee.cnt)
        guard count > 0, let elements = pointer.pointee.elems else { return [] }
        return (0..<count).map { index in
            let element = elements[index]
            guard let bytes = element.metadata, element.metadata_size > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: bytes, count: element.metadata_size), as: UTF8.self)
        }
    }
}
