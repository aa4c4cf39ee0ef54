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
}
