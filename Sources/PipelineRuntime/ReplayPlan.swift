public import KafkaClient

/// What a replay reprocesses: for each partition of the sends topic, a range of offsets, and whether anything is
/// written at all.
///
/// A pipeline given a plan reads exactly those ranges (resuming after the offsets its group committed in an earlier
/// run of the same replay), judges time by each event's own time, schedules no timers, and stops once every
/// partition reached its end.
///
/// A replay's group keeps the progress of one range into one destination: every offset the replay commits carries,
/// as its commit metadata, the range it is progress in and where its outputs went (``ReplayCommitMetadata``). A run
/// resumes from the group's commits only where they are progress in its own range into its own destination; commits
/// in another range or into another destination (or commits that name none, past the range's start) are refused with
/// ``ReplayGroupConflict``, since resuming from them would skip records never replayed there.
public struct ReplayPlan: Sendable, Equatable {
    /// Offsets to process per partition: from the first (included) to the end (excluded).
    public var ranges: [KafkaTopicPartition: Range<Int64>]
    /// Render and count only: write nothing to any topic and commit nothing.
    public var isDryRun: Bool
    /// The boundaries the ranges were resolved from (`--from`, `--to`), when known. Recorded with the commits, they
    /// let a run with the same boundaries resume the replay where they now resolve to other offsets (`end` moves as
    /// producers write, `beginning` as retention deletes records). Without them, only the same offsets resume it.
    public var from: ReplayBoundary?
    /// The `--to` the ranges were resolved from, when known (see ``from``).
    public var to: ReplayBoundary?
    /// Where the replay's outputs go, when known. Recorded with the commits, so that a group that replayed a range
    /// into the `replay.` topics is not taken to have delivered it (`--deliver`) too.
    public var output: ReplayOutput?

    /// Creates a plan.
    ///
    /// - Parameters:
    ///   - ranges: the offsets to replay per partition.
    ///   - isDryRun: render and count only.
    ///   - from: the `--from` the ranges were resolved from, if any.
    ///   - to: the `--to` the ranges were resolved from, if any.
    ///   - output: where the replay's outputs go, if known.
    public init(
        ranges: [KafkaTopicPartition: Range<Int64>],
        isDryRun: Bool = false,
        from: ReplayBoundary? = nil,
        to: ReplayBoundary? = nil,
        output: ReplayOutput? = nil
    ) {
        self.ranges = ranges
        self.isDryRun = isDryRun
        self.from = from
        self.to = to
        self.output = output
    }

    /// The number of offsets in the ranges: records, and any offsets that hold none (transaction markers, records of
    /// aborted transactions).
    public var totalCount: Int64 { ranges.values.reduce(0) { $0 + Int64($1.count) } }

    /// What the replay commits with `partition`'s offsets: the range it replays there (`nil` for a partition the
    /// plan does not replay).
    public func commitMetadata(of partition: KafkaTopicPartition) -> ReplayCommitMetadata? {
        guard let range = ranges[partition] else { return nil }
        return ReplayCommitMetadata(
            from: from.map { Self.text(of: $0, for: partition.partition, isStart: true) },
            to: to.map { Self.text(of: $0, for: partition.partition, isStart: false) },
            range: range,
            output: output
        )
    }

    /// A boundary as it applies to one partition, as it would be given on the command line.
    private static func text(of boundary: ReplayBoundary, for partition: Int32, isStart: Bool) -> String {
        switch boundary {
        case .beginning, .end, .time:
            return boundary.description
        case .offsets(let offsets):
            // A partition the offsets leave out is read from the beginning or to the end (see `ReplayBoundary.resolve`).
            return offsets[partition].map { "\(partition):\($0)" } ?? (isStart ? "beginning" : "end")
        }
    }

    /// Where a replay whose group has committed `committed` (with its metadata) starts `partition`'s range: after
    /// the offset committed there when it is progress in this replay's range (the range's start at least, its end at
    /// most), otherwise at the range's start. `nil` for a partition the plan does not replay.
    ///
    /// - Throws: ``ReplayGroupConflict`` when the group's commit there is progress in another range or into another
    ///   destination, or names no range while it lies past this range's start: resuming from it could skip records
    ///   the group never replayed there.
    public func start(of partition: KafkaTopicPartition, after committed: [KafkaOffsetAndMetadata], group: String) throws(ReplayGroupConflict) -> Int64? {
        guard let range = ranges[partition], let mine = commitMetadata(of: partition) else { return nil }
        guard let previous = committed.first(where: { $0.position.topicPartition == partition }), previous.position.offset >= 0 else {
            return range.lowerBound
        }
        let offset = previous.position.offset
        let recorded = ReplayCommitMetadata(parsing: previous.metadata)
        if let recorded {
            if mine.resumes(recorded) { return min(max(offset, range.lowerBound), range.upperBound) }
        } else if offset <= range.lowerBound {
            // Progress in something before this range, whatever it was: it claims nothing of the range.
            return range.lowerBound
        }
        throw ReplayGroupConflict(group: group, partition: partition, committedOffset: offset, committedRange: recorded, range: mine)
    }

    /// The offsets of `partition` this replay was to read that lie before its range's start: from the offset its
    /// group committed in this range, or else the offset `--from` gave, to the range's start (or to the offset `--to`
    /// gave, when that is earlier), where the partition's first offset still stored put it (retention deleted the
    /// records there). `nil` when there are none. They are checked with the offsets the reading jumps over
    /// (``CampaignPipeline/offsetsDeletedBeforeRead``).
    public func offsetsBeforeStart(of partition: KafkaTopicPartition, after committed: [KafkaOffsetAndMetadata]) -> Range<Int64>? {
        guard let range = ranges[partition], let mine = commitMetadata(of: partition) else { return nil }
        var requested: Int64?
        if let previous = committed.first(where: { $0.position.topicPartition == partition }), previous.position.offset >= 0,
            let recorded = ReplayCommitMetadata(parsing: previous.metadata), mine.resumes(recorded)
        {
            requested = previous.position.offset
        } else if case .offsets(let starts)? = from {
            requested = starts[partition.partition]
        }
        var end = range.lowerBound
        if case .offsets(let ends)? = to, let given = ends[partition.partition] { end = min(end, given) }
        guard let requested, requested < end else { return nil }
        return requested..<end
    }

    /// Where a replay whose group has committed `committed` starts each partition (``start(of:after:group:)``).
    ///
    /// - Throws: ``ReplayGroupConflict`` naming the first partition (in partition order) whose commit is not progress in
    ///   this replay's range, and how many more there are.
    public func starts(after committed: [KafkaOffsetAndMetadata], group: String) throws(ReplayGroupConflict) -> [KafkaTopicPartition: Int64] {
        var starts: [KafkaTopicPartition: Int64] = [:]
        var conflict: ReplayGroupConflict?
        for partition in ranges.keys.sorted(by: { ($0.topic, $0.partition) < ($1.topic, $1.partition) }) {
            do {
                starts[partition] = try start(of: partition, after: committed, group: group)
            } catch {
                if conflict == nil { conflict = error } else { conflict?.otherPartitions += 1 }
            }
        }
        if let conflict { throw conflict }
        return starts
    }

    /// The number of offsets left to replay when a replay group has committed `committed` (each partition's
    /// ``start(of:after:group:)`` to its range's end).
    ///
    /// - Throws: ``ReplayGroupConflict`` as ``starts(after:group:)``.
    public func remainingCount(after committed: [KafkaOffsetAndMetadata], group: String) throws(ReplayGroupConflict) -> Int64 {
        let starts = try starts(after: committed, group: group)
        return ranges.reduce(0) { total, entry in total + entry.value.upperBound - (starts[entry.key] ?? entry.value.upperBound) }
    }
}

/// Where a replay's outputs go.
public enum ReplayOutput: Sendable, Equatable, CustomStringConvertible {
    /// The live output topics and the configured FCM/APNs sinks (`--deliver`).
    case live
    /// Topics named with this prefix before the live ones' names (`--output-prefix`).
    case prefixed(String)

    /// As committed: `live`, or `prefix:` and the prefix (a colon is not allowed in a topic name, so the two never
    /// meet).
    var encoded: String {
        switch self {
        case .live: "live"
        case .prefixed(let prefix): "prefix:" + prefix
        }
    }

    /// Reads ``encoded``; `nil` for any other text.
    init?(encoded text: Substring) {
        if text == "live" {
            self = .live
        } else if text.hasPrefix("prefix:") {
            self = .prefixed(String(text.dropFirst("prefix:".count)))
        } else {
            return nil
        }
    }

    /// `the LIVE topics (--deliver)` or `topics prefixed 'replay.'`.
    public var description: String {
        switch self {
        case .live: "the LIVE topics (--deliver)"
        case .prefixed(let prefix): "topics prefixed '\(prefix)'"
        }
    }
}

/// What a replay commits with each offset of a partition, as the offset's commit metadata: the range it replays
/// there, as its boundaries were given (`--from`, `--to`, as they apply to the partition) and as resolved to offsets,
/// and where its outputs go.
///
/// Encoded as `campaign-pipeline-replay/1 from=<boundary> to=<boundary> offsets=<first>..<<end> output=<output>` (a
/// boundary or output not known is left out), well within the 4096 bytes brokers keep by default.
public struct ReplayCommitMetadata: Sendable, Equatable, CustomStringConvertible {
    /// `--from` as it applies to the partition (`beginning`, an RFC 3339 time, or `partition:offset`); `nil` when not
    /// known.
    public var from: String?
    /// `--to` as it applies to the partition (`end`, an RFC 3339 time, or `partition:offset`); `nil` when not known.
    public var to: String?
    /// The offsets the boundaries resolved to when the replay started.
    public var range: Range<Int64>
    /// Where the outputs went; `nil` when not known (a plan made in code, or a replay by an earlier campaign-pipeline,
    /// which did not record it).
    public var output: ReplayOutput?

    static let tag = "campaign-pipeline-replay/1"

    /// Creates the metadata of a range.
    public init(from: String?, to: String?, range: Range<Int64>, output: ReplayOutput? = nil) {
        self.from = from
        self.to = to
        self.range = range
        self.output = output
    }

    /// Reads metadata a replay committed; `nil` for any other text (none, another client's, another version's).
    public init?(parsing text: String) {
        let fields = text.split(separator: " ")
        guard fields.first == Self.tag[...] else { return nil }
        var values: [Substring: Substring] = [:]
        for field in fields.dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { return nil }
            values[field[..<equals]] = field[field.index(after: equals)...]
        }
        guard let offsets = values["offsets"], let separator = offsets.firstRange(of: "..<"),
            let first = Int64(offsets[..<separator.lowerBound]), let end = Int64(offsets[separator.upperBound...]), first <= end
        else { return nil }
        var output: ReplayOutput?
        if let text = values["output"] {
            guard let parsed = ReplayOutput(encoded: text) else { return nil }
            output = parsed
        }
        self.init(from: values["from"].map(String.init), to: values["to"].map(String.init), range: first..<end, output: output)
    }

    /// The text committed.
    public var encoded: String {
        var fields = [Self.tag]
        if let from { fields.append("from=\(from)") }
        if let to { fields.append("to=\(to)") }
        fields.append("offsets=\(range.lowerBound)..<\(range.upperBound)")
        if let output { fields.append("output=\(output.encoded)") }
        return fields.joined(separator: " ")
    }

    /// Whether a replay of this range resumes from progress committed in `recorded`'s: the same destination, and the
    /// same range (``isSameRange(as:)``).
    func resumes(_ recorded: ReplayCommitMetadata) -> Bool {
        output == recorded.output && isSameRange(as: recorded)
    }

    /// Whether this is the range `recorded` was progress in: the same boundaries (resolved to the same offsets, or to
    /// a start no earlier: a start can only move on), or, boundaries not known, the same offsets.
    func isSameRange(as recorded: ReplayCommitMetadata) -> Bool {
        if let from, let to, from == recorded.from, to == recorded.to {
            return recorded.range.lowerBound <= range.lowerBound
        }
        return recorded.range == range
    }

    /// `--from 0:2 --to 0:4 (offsets 2..<4)`, or `offsets 2..<4` when the boundaries are not known.
    public var description: String {
        let offsets = "offsets \(range.lowerBound)..<\(range.upperBound)"
        guard from != nil || to != nil else { return offsets }
        return "--from \(from ?? "?") --to \(to ?? "?") (\(offsets))"
    }

    /// Where the outputs went, for a message: `into topics prefixed 'replay.'`, or `without recording where its
    /// outputs went` when not known.
    var outputDescription: String {
        output.map { "into \($0)" } ?? "without recording where its outputs went"
    }
}

/// A replay's group has commits that are not progress in the replay's range into its destination: in another range
/// or into another destination (its commit metadata names them), or in none it names (committed by another client,
/// or by an earlier campaign-pipeline) past the range's start. Resuming from them would skip records the group never
/// replayed there, so the replay does not start.
public struct ReplayGroupConflict: Error, Sendable, CustomStringConvertible {
    /// The replay's consumer group.
    public var group: String
    /// The first partition (in partition order) with such a commit.
    public var partition: KafkaTopicPartition
    /// The offset committed there.
    public var committedOffset: Int64
    /// The range the commit is progress in; `nil` when its metadata names none.
    public var committedRange: ReplayCommitMetadata?
    /// This replay's range in the partition.
    public var range: ReplayCommitMetadata
    /// How many more partitions of the replay have such commits.
    public var otherPartitions = 0

    public var description: String {
        let more = otherPartitions == 0 ? "" : " (and in \(otherPartitions) more partition\(otherPartitions == 1 ? "" : "s"))"
        guard let committedRange else {
            return "--group \(group) has committed offset \(committedOffset) in \(partition)\(more), past the start of this replay's range "
                + "(\(range)), without saying which range it is progress in (a commit by another client, or by an earlier "
                + "campaign-pipeline): resuming from it could skip records never replayed. Give a new --group (or none, for a new one) "
                + "to replay this range"
        }
        if range.isSameRange(as: committedRange) {
            // The same range, into another destination: `--deliver` after a replay into the replay.* topics must not
            // be told that the group has delivered it all.
            let mine = range.output.map { "this replay writes into \($0)" } ?? "this replay names no destination"
            return "--group \(group) has replayed this range \(committedRange.outputDescription): in \(partition) it committed offset "
                + "\(committedOffset) as progress in \(committedRange), and \(mine)\(more). A replay "
                + "group keeps the progress of one range into one destination: give a new --group (or none, for a new one) to replay "
                + "this range there"
        }
        return "--group \(group) has replayed another range: in \(partition) it committed offset \(committedOffset) as progress in "
            + "\(committedRange), and this replay is \(range)\(more). A replay group keeps the progress of one range: give a new "
            + "--group (or none, for a new one) to replay this range, or the same --from and --to as that replay to resume it"
    }
}

/// How far a replay has come, per partition and in total.
public struct ReplayProgress: Sendable {
    /// One partition's progress.
    public struct Partition: Sendable {
        /// The partition.
        public var partition: KafkaTopicPartition
        /// Records of the range processed.
        public var done: Int64
        /// Records in the range.
        public var total: Int64
    }

    /// Per partition, in partition order.
    public var partitions: [Partition]
    /// Seconds since the replay started reading.
    public var elapsedSeconds: Double
    /// Records of ``done`` that an earlier run of the replay's group did (a resumed replay starts after them).
    public var doneBeforeStart: Int64

    /// Records processed in all partitions.
    public var done: Int64 { partitions.reduce(0) { $0 + $1.done } }
    /// Records in all ranges.
    public var total: Int64 { partitions.reduce(0) { $0 + $1.total } }
    /// Records per second this run has processed so far.
    public var rate: Double { elapsedSeconds > 0 ? Double(max(0, done - doneBeforeStart)) / elapsedSeconds : 0 }
}
