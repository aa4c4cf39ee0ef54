public import Foundation

/// A partition of a topic.
public struct KafkaTopicPartition: Hashable, Sendable, CustomStringConvertible {
    /// The topic name.
    public var topic: String
    /// The partition number.
    public var partition: Int32

    /// Creates a topic-partition pair.
    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)/\(partition)" }
}

/// A position in a partition: the offset of the next record to read there.
///
/// Kafka's convention applies throughout this module: a committed offset is the offset of the *next* record to
/// consume, so marking the record at offset 41 done means committing offset 42.
public struct KafkaTopicPartitionOffset: Hashable, Sendable, CustomStringConvertible {
    /// The topic name.
    public var topic: String
    /// The partition number.
    public var partition: Int32
    /// The offset.
    public var offset: Int64

    /// Creates a position.
    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }

    /// The topic-partition of this position.
    public var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }

    public var description: String { "\(topic)/\(partition)@\(offset)" }
}

/// A position committed with a text of the application's (Kafka's `OffsetAndMetadata`): the group coordinator keeps
/// the text with the offset, and ``KafkaConsumer/committedWithMetadata(_:timeout:)`` reads it back.
public struct KafkaOffsetAndMetadata: Hashable, Sendable, CustomStringConvertible {
    /// The position (the offset of the next record to read).
    public var position: KafkaTopicPartitionOffset
    /// The text committed with the offset; empty when none was (or the position is ``KafkaOffset/invalid``).
    public var metadata: String

    /// Creates a position with its metadata.
    public init(_ position: KafkaTopicPartitionOffset, metadata: String) {
        self.position = position
        self.metadata = metadata
    }

    public var description: String { metadata.isEmpty ? position.description : "\(position) (\(metadata))" }
}

/// A record header: a name and an optional value.
///
/// A header made from a string keeps the string (no byte array per header: the pipeline writes several per record);
/// headers compare and hash by their bytes, however they were made.
public struct KafkaHeader: Hashable, Sendable {
    /// How the value is held.
    private enum Storage: Sendable {
        case none
        case bytes([UInt8])
        case text(String)
    }

    /// The header name.
    public var key: String
    private var storage: Storage

    /// The header value; `nil` is a header without a value.
    public var value: [UInt8]? {
        get {
            switch storage {
            case .none: nil
            case .bytes(let bytes): bytes
            case .text(let text): Array(text.utf8)
            }
        }
        set { storage = newValue.map(Storage.bytes) ?? .none }
    }

    /// Creates a header from bytes.
    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.storage = value.map(Storage.bytes) ?? .none
    }

    /// Creates a header from a UTF-8 string.
    public init(key: String, string: String) {
        self.key = key
        self.storage = .text(string)
    }

    /// The value as UTF-8 text, if it is present and valid UTF-8.
    public var stringValue: String? {
        switch storage {
        case .none: nil
        case .bytes(let bytes): String(validating: bytes, as: UTF8.self)
        case .text(let text): text
        }
    }

    /// The value's size in bytes; `nil` without a value.
    var valueByteCount: Int? {
        switch storage {
        case .none: nil
        case .bytes(let bytes): bytes.count
        case .text(let text): text.utf8.count
        }
    }

    /// Copies the value's bytes (nothing without a value) into `buffer` from `offset`; returns the offset after them.
    func initializeValue(in buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
        switch storage {
        case .none: offset
        case .bytes(let bytes): buffer[offset...].initialize(fromContentsOf: bytes)
        case .text(let text): buffer[offset...].initialize(fromContentsOf: text.utf8)
        }
    }

    public static func == (lhs: KafkaHeader, rhs: KafkaHeader) -> Bool {
        lhs.key == rhs.key && lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(value)
    }
}

/// A record to produce.
public struct KafkaProducerRecord: Sendable, Hashable {
    /// The destination topic.
    public var topic: String
    /// The destination partition; `nil` lets the partitioner choose from the key.
    public var partition: Int32?
    /// The record key.
    public var key: [UInt8]?
    /// The record value.
    public var value: [UInt8]?
    /// The record headers, in order.
    public var headers: [KafkaHeader]
    /// The record timestamp; `nil` lets librdkafka stamp the current time.
    public var timestamp: Date?

    /// Creates a record.
    public init(
        topic: String,
        partition: Int32? = nil,
        key: [UInt8]? = nil,
        value: [UInt8]?,
        headers: [KafkaHeader] = [],
        timestamp: Date? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }
}

/// Where the cluster stored a produced record.
public struct KafkaDeliveryReport: Sendable, Hashable {
    /// The topic.
    public var topic: String
    /// The partition the record landed in.
    public var partition: Int32
    /// The record's offset in that partition.
    public var offset: Int64

    /// Creates a report.
    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A record read by a ``KafkaConsumer``.
public struct KafkaConsumerMessage: Sendable, Hashable {
    /// The topic it was read from.
    public var topic: String
    /// The partition it was read from.
    public var partition: Int32
    /// Its offset in the partition.
    public var offset: Int64
    /// The record key.
    public var key: [UInt8]?
    /// The record value.
    public var value: [UInt8]?
    /// The record headers, in order.
    public var headers: [KafkaHeader]
    /// The record timestamp (create or log-append time), if the record has one.
    public var timestamp: Date?
    /// The partition's ``KafkaConsumer/assignmentGeneration(of:)`` when the record was read. Once the partition is
    /// revoked, or revoked and given back (a new generation), the record belongs to a reading that is over: the
    /// partition's next reading (by this consumer or another) reads it again from the committed offset.
    public var assignmentGeneration: Int

    /// Creates a message (consumers create them; tests may too).
    public init(
        topic: String,
        partition: Int32,
        offset: Int64,
        key: [UInt8]?,
        value: [UInt8]?,
        headers: [KafkaHeader],
        timestamp: Date?,
        assignmentGeneration: Int = 0
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
        self.assignmentGeneration = assignmentGeneration
    }

    /// The topic-partition the message came from.
    public var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }

    /// The position to commit once this message is done: its offset plus one.
    public var nextPosition: KafkaTopicPartitionOffset {
        KafkaTopicPartitionOffset(topic: topic, partition: partition, offset: offset + 1)
    }

    /// The first header with this name, as UTF-8 text.
    public func header(_ key: String) -> String? {
        headers.first { $0.key == key }?.stringValue
    }
}

/// The low and high watermark of a partition: the first offset still stored and the offset the next record
/// will get.
public struct KafkaWatermarks: Sendable, Hashable {
    /// The first offset still stored in the partition.
    public var low: Int64
    /// The offset the next produced record will get (one past the last record).
    public var high: Int64
}
