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
                        // The word each option can use (`--from end` and `--to beginning` would replay nothing).
                        reason: "'\(text)' is not \(option == "--to" ? "'end'" : option == "--from" ? "'beginning'" : "'beginning', 'end'"), an RFC 3339 time (2026-11-20T10:00:00Z) or partition:offset,… (0:120,1:98)"
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
        case .beginning:
            return "beginning"
        case .end:
            return "end"
        case .time(let date):
            // RFC 3339 to the microsecond, what a `Date` keeps of the time given (its description drops the fraction).
            let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
            let seconds = (micros / 1_000_000).rounded(.down)
            return Timestamp(secondsSince1970: Int64(seconds), nanoseconds: Int32(micros - seconds * 1_000_000) * 1_000).rfc3339
        case .offsets(let offsets):
            return offsets.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        }
    }

    /// Resolves `from` and `to` into offset ranges of every partition of `topic` (or of the partitions an offset
    /// `from` names; an offset `to` may then name only those, and must otherwise name every partition), clamped to
    /// what the partitions hold now. An offset `to` before its partition's start is an error. Times are looked up with
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
        } else if case .offsets(let ends) = to {
            // A partition it leaves out would be replayed to its end: an error rather than a surprise.
            let unnamed = partitions.map(\.partition).filter { ends[$0] == nil }
            if !unnamed.isEmpty {
                throw ConfigurationError(
                    key: "--to",
                    reason: "gives no end for partition\(unnamed.count == 1 ? "" : "s") \(unnamed.map(String.init).joined(separator: ",")) of '\(topic)', which --from \(from) would replay to \(unnamed.count == 1 ? "its end" : "their ends"); name an end for every partition, or give --from as offsets to replay only the partitions it names"
                )
            }
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
            let firstRead = max(starts[partition] ?? marks.low, marks.low)
            // A start given as an offset past the partition's end, or past where --to (a time, `beginning`) ends it:
            // not an empty range (both were replayed as one, and the run said only "nothing to replay").
            if case .offsets(let given) = from, let givenStart = given[partition.partition] {
                if givenStart > marks.high {
                    throw ConfigurationError(
                        key: "--from",
                        reason: "partition \(partition.partition) starts at offset \(givenStart), past its end (offset \(marks.high))"
                    )
                }
                if givenStart > end {
                    throw ConfigurationError(key: "--to", reason: "--to \(to) ends partition \(partition.partition) at offset \(end), before --from's \(givenStart)")
                }
            }
            // An end given as an offset that the start (a time, or the first record stored) is past: not an empty range.
            if case .offsets(let given) = to, let givenEnd = given[partition.partition], firstRead > givenEnd {
                if firstRead == marks.low {
                    // Retention deleted the whole range (or --from beginning meets an end it deleted).
                    throw ConfigurationError(
                        key: "--to",
                        reason: "partition \(partition.partition) ends at offset \(givenEnd), but its records before offset \(marks.low) were deleted (by the topic's retention, or a deletion of records): the range holds none any more"
                    )
                }
                throw ConfigurationError(
                    key: "--to",
                    reason: "partition \(partition.partition) ends at offset \(givenEnd), before where --from \(from) starts it (offset \(firstRead))"
                )
            }
            ranges[partition] = min(firstRead, end)..<end
        }
        return ranges
    }
}
