public import Foundation
public import KafkaClient
import PipelineCore

/// One end of a replay range, as given on the command line.
public enum ReplayBoundary: Sendable, Equatable, CustomStringConvertible {
    /// The first record still stored.
    case beginning
    /// The end of each partition when the replay starts (so a replay ends even while producers keep writing).
    case end
    /// The first record at or after this instant (by record timestamp).
    case time(Date)
    /// Explicit offsets per partition (`0:1200,1:980`).
    case offsets([Int32: Int64])

    /// Parses `beginning`, `end`, an RFC 3339 time, or `partition:offset,…`.
    ///
    /// - Throws: ``ConfigurationError`` naming `option` and what is wrong with the value.
    public init(parsing text: String, option: String) throws(ConfigurationError) {
        switch text {
        case "beginning": self = .beginning
        case "end": self = .end
        default:
            if let timestamp = try? Timestamp(rfc3339: text) {
                self = .time(Date(timeIntervalSince1970: Double(timestamp.secondsSince1970) + Double(timestamp.nanoseconds) / 1e9))
                return
            }
            var offsets: [Int32: Int64] = [:]
            for part in text.split(separator: ",") {
                let pieces = part.split(separator: ":")
                guard pieces.count == 2, let partition = Int32(pieces[0]), let offset = Int64(pieces[1]), partition >= 0, offset >= 0 else {
                    throw ConfigurationError(
                        key: option,
                        reason: "'\(text)' is not 'beginning', 'end', an RFC 3339 time (2026-11-20T10:00:00Z) or partition:offset,… (0:120,1:98)"
                    )
                }
                guard offsets[partition] == nil else {
                    throw ConfigurationError(key: option, reason: "partition \(partition) is given twice in '\(text)'")
                }
                offsets[partition] = offset
            }
            guard !offsets.isEmpty else { throw ConfigurationError(key: option, reason: "empty value") }
            self = .offsets(offsets)
        }
    }

    public var description: String {
        switch self {
        case .beginning: "beginning"
        case .end: "end"
        case .time(let date): "\(date)"
        case .offsets(let offsets): offsets.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        }
    }

    /// Resolves `from` and `to` into offset ranges of every partition of `topic` (or of the partitions an offset
    /// `from` names; an offset `to` may then name only those), clamped to what the partitions hold now. Times are looked up with
    /// ``KafkaConsumer/offsets(forTimestamp:in:strategy:timeout:)``, which also works on brokers whose time index
    /// cannot be trusted.
    public static func resolve(
        from: ReplayBoundary,
        to: ReplayBoundary,
        topic: String,
        using consumer: KafkaConsumer
    ) async throws -> [KafkaTopicPartition: Range<Int64>] {
        let count = try await consumer.partitionCount(topic: topic)
        var partitions = (0..<count).map { KafkaTopicPartition(topic: topic, partition: $0) }
        for (boundary, option) in [(from, "--from"), (to, "--to")] {
            guard case .offsets(let offsets) = boundary else { continue }
            for partition in offsets.keys.sorted() where partition >= count {
                throw ConfigurationError(key: option, reason: "topic '\(topic)' has no partition \(partition) (it has \(count))")
            }
        }
        if case .offsets(let starts) = from {
            if case .offsets(let ends) = to {
                for (partition, start) in starts.sorted(by: { $0.key < $1.key }) {
                    if let end = ends[partition], end < start {
                        throw ConfigurationError(key: "--to", reason: "partition \(partition) ends at offset \(end), before --from's \(start)")
                    }
                }
                // Ignored, it would leave the partitions --from names to run to their ends.
                for partition in ends.keys.sorted() where starts[partition] == nil {
                    throw ConfigurationError(
                        key: "--to",
                        reason: "partition \(partition), which --from does not replay (it names \(starts.keys.sorted().map(String.init).joined(separator: ",")))"
                    )
                }
            }
            partitions = partitions.filter { starts[$0.partition] != nil }
        }
        var watermarks: [KafkaTopicPartition: KafkaWatermarks] = [:]
        for partition in partitions {
            watermarks[partition] = try await consumer.watermarks(topic: topic, partition: partition.partition)
        }
        func positions(_ boundary: ReplayBoundary, isStart: Bool) async throws -> [KafkaTopicPartition: Int64] {
            switch boundary {
            case .beginning:
                return watermarks.mapValues(\.low)
            case .end:
                return watermarks.mapValues(\.high)
            case .time(let date):
                let found = try await consumer.offsets(forTimestamp: date, in: partitions)
                return Dictionary(uniqueKeysWithValues: found.map { ($0.topicPartition, $0.offset) })
            case .offsets(let offsets):
                return Dictionary(uniqueKeysWithValues: partitions.map { partition in
                    (partition, offsets[partition.partition] ?? (isStart ? watermarks[partition]!.low : watermarks[partition]!.high))
                })
            }
        }
        let starts = try await positions(from, isStart: true)
        let ends = try await positions(to, isStart: false)
        var ranges: [KafkaTopicPartition: Range<Int64>] = [:]
        for partition in partitions {
            let marks = watermarks[partition]!
            let end = min(max(ends[partition] ?? marks.high, marks.low), marks.high)
            let start = min(max(starts[partition] ?? marks.low, marks.low), end)
            ranges[partition] = start..<end
        }
        return ranges
    }
}
