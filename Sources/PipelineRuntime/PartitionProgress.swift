import KafkaClient
import Synchronization

/// Tracks the events of one source partition from the moment they are read until every output derived from
/// them is acknowledged, and says how far the partition may be committed: up to (not past) the first event
/// with an unacknowledged output.
///
/// The tracker knows each event as read (``begin(offset:)``) and then done (``complete(at:)``); the units an event
/// waits on in between (the processing loop's own, its outputs, its deliveries) are counted by its ``EventTicket``,
/// without the tracker's lock. A revoked partition's tracker is retired: late acknowledgements for it change nothing.
final class PartitionProgress: Sendable {
    private struct Entry {
        var offset: Int64
        var isDone = false
        /// A sink gave the event up (it stopped): it never completes, and holds the commit back for good.
        var isAbandoned = false
    }

    private struct State {
        var entries: [Entry] = []
        var head = 0
        /// The position after the last event whose outputs are all acknowledged, in order.
        var completedPosition: Int64?
        /// The offset of the last event registered.
        var lastBegun: Int64?
        /// Deliveries waiting on each sink (by name), to hold the partition while one of them is throttled.
        var sinkWaits: [String: Int] = [:]

        /// The entry index of `offset` (entries are in increasing offset order).
        func index(of offset: Int64) -> Int? {
            var low = head
            var high = entries.count
            while low < high {
                let middle = (low + high) / 2
                if entries[middle].offset < offset {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            return low < entries.count && entries[low].offset == offset ? low : nil
        }
    }

    let partition: KafkaTopicPartition
    /// The consumer's assignment generation of the partition this tracker counts for.
    let generation: Int
    /// What the run does when an event's completion advances this partition's position. Held here, once per
    /// partition, not by every event's ticket: a reference from each ticket would be counted on the thread that reads
    /// the event and again on the one that finishes it. The completion holds the run, so the run lets its trackers go
    /// when it ends.
    let completion: EventCompletion
    private let state = Mutex(State())

    init(partition: KafkaTopicPartition, generation: Int = 0, completion: EventCompletion = EventCompletion()) {
        self.partition = partition
        self.generation = generation
        self.completion = completion
        // The flag, not the tracker: a closure holding the tracker would keep it alive for good.
        isRetiredCheck = { [retired] in retired.isSet }
    }

    /// A flag set once.
    private final class RetiredFlag: Sendable {
        private let flag = Atomic<Bool>(false)

        var isSet: Bool { flag.load(ordering: .acquiring) }

        func set() { flag.store(true, ordering: .releasing) }
    }

    /// The number of events in flight (read without the lock).
    var inFlight: Int { inFlightCount.load(ordering: .relaxed) }

    /// The events still waiting for an output: in flight, neither done (behind an unfinished one) nor abandoned.
    var unfinished: Int {
        state.withLock { state in
            state.entries[state.head...].reduce(0) { $0 + (!$1.isDone && !$1.isAbandoned ? 1 : 0) }
        }
    }

    /// Marks the event at `offset` given up by a sink: it stays uncommitted, and draining no longer waits for it.
    func abandon(at offset: Int64) {
        state.withLock { state in
            guard let index = state.index(of: offset) else { return }
            state.entries[index].isAbandoned = true
        }
    }

    /// The position up to which everything is done (`nil` before the first event completes).
    var completedPosition: Int64? { state.withLock { $0.completedPosition } }

    /// Where the partition's unfinished events begin: the first event registered and not done, else the position
    /// after the last one (`nil` before the first).
    var firstUnfinished: Int64? {
        state.withLock { state in
            state.head < state.entries.count ? state.entries[state.head].offset : (state.completedPosition ?? state.lastBegun.map { $0 + 1 })
        }
    }

    /// The offset after the last event registered (`nil` before the first).
    var nextOffset: Int64? { state.withLock { $0.lastBegun.map { $0 + 1 } } }

    // Changed only under the state's lock, and read without it on the hot paths (every delivery's cancellation
    // check; the backpressure checks of every event read and completed).
    private let retired = RetiredFlag()
    private let inFlightCount = Atomic<Int>(0)
    private let pausedFlag = Atomic<Bool>(false)
    /// Whether the tracker waits among the pipeline's trackers to store (see ``markPositionToStore()``).
    private let storePending = Atomic<Bool>(false)
    /// ``isRetired`` as a closure, made once per tracker: every delivery of the partition hands it to its sinks as
    /// their cancellation check.
    let isRetiredCheck: @Sendable () -> Bool

    /// Whether the partition was revoked (``retire()``).
    var isRetired: Bool { retired.isSet }

    /// Whether the partition is paused for backpressure.
    var isPaused: Bool { pausedFlag.load(ordering: .relaxed) }

    /// Registers a newly read event, not done until ``complete(at:)``.
    ///
    /// - Returns: `false` (registering nothing) when `offset` is not after the last event registered: the
    ///   partition was rewound (revoked and assigned again, or sought), and the caller must start a new tracker.
    func begin(offset: Int64) -> Bool {
        state.withLock { state in
            guard !retired.isSet else { return false }
            if let last = state.lastBegun, offset <= last { return false }
            state.lastBegun = offset
            state.entries.append(Entry(offset: offset))
            inFlightCount.store(state.entries.count - state.head, ordering: .relaxed)
            return true
        }
    }

    /// Marks the event at `offset` done (its ticket's last unit is).
    ///
    /// - Returns: the new position to commit, when the completed prefix advanced.
    func complete(at offset: Int64) -> Int64? {
        state.withLock { state in
            guard !retired.isSet, let index = state.index(of: offset) else { return nil }
            state.entries[index].isDone = true
            var advanced: Int64?
            while state.head < state.entries.count, state.entries[state.head].isDone {
                advanced = state.entries[state.head].offset + 1
                state.head += 1
            }
            if state.head > 1_024, state.head * 2 > state.entries.count {
                state.entries.removeFirst(state.head)
                state.head = 0
            }
            if let advanced {
                state.completedPosition = advanced
                inFlightCount.store(state.entries.count - state.head, ordering: .relaxed)
            }
            return advanced
        }
    }

    /// Marks the advanced commit position as waiting to be stored; `true` when it was not already waiting (then
    /// the caller queues the tracker for the next store), so a tracker is queued once per store, not per event.
    func markPositionToStore() -> Bool {
        !storePending.exchange(true, ordering: .sequentiallyConsistent)
    }

    /// Takes the tracker off the waiting list before its position is read for storing: an advance after this
    /// queues it again.
    func positionTakenForStore() {
        storePending.store(false, ordering: .sequentiallyConsistent)
    }

    /// Counts deliveries of this partition's events waiting on `sink` (`delta` +1 when handed over, -1 when answered).
    func wait(on sink: String, _ delta: Int) {
        state.withLock { state in
            state.sinkWaits[sink, default: 0] += delta
        }
    }

    /// Stops tracking: the partition was revoked.
    func retire() {
        state.withLock { state in
            retired.set()
            state.entries = []
            state.head = 0
            inFlightCount.store(0, ordering: .relaxed)
        }
    }

    /// Pauses the partition when `limit` events are in flight, or while one of its deliveries waits on a sink in
    /// `throttledSinks`; resumes it when half of the events are done and none waits on a throttled sink.
    /// `apply` (pause when `true`) runs under the tracker's lock, so pause and resume calls cannot cross.
    func updateBackpressure(limit: Int, throttledSinks: Set<String> = [], apply: (Bool) -> Void) {
        state.withLock { state in
            guard !retired.isSet else { return }
            let inFlight = state.entries.count - state.head
            let isHeld = !throttledSinks.isEmpty && state.sinkWaits.contains { throttledSinks.contains($0.key) && $0.value > 0 }
            let isPaused = pausedFlag.load(ordering: .relaxed)
            if !isPaused, inFlight >= limit || isHeld {
                pausedFlag.store(true, ordering: .relaxed)
                apply(true)
            } else if isPaused, inFlight <= limit / 2, !isHeld {
                pausedFlag.store(false, ordering: .relaxed)
                apply(false)
            }
        }
    }
}

/// The units of one event still outstanding: the processing loop's own, one per output record, and one per delivery
/// to the sinks. Counted here, without a lock, so the partition's tracker hears of the event only twice: when it is
/// read (``PartitionProgress/begin(offset:)``) and when its last unit is done (``PartitionProgress/complete(at:)``).
final class EventTicket: Sendable {
    let tracker: PartitionProgress
    let offset: Int64
    /// Starts at one: the processing loop's unit, done once everything for the event is queued.
    private let units = Atomic<Int>(1)

    init(tracker: PartitionProgress, offset: Int64) {
        self.tracker = tracker
        self.offset = offset
    }

    /// Adds `count` outstanding units; call before the work they stand for can finish.
    func add(_ count: Int) {
        guard count > 0 else { return }
        units.add(count, ordering: .relaxed)
    }

    /// Marks one unit done; `true` when it was the last, and the event is complete.
    func completeUnit() -> Bool {
        let remaining = units.subtract(1, ordering: .acquiringAndReleasing).newValue
        assert(remaining >= 0, "more units completed than added for offset \(offset)")
        return remaining == 0
    }

    /// Marks one unit done. After the last, the event is done in its tracker, and when that advanced the partition's
    /// commit position, the run hears of it through the tracker's ``PartitionProgress/completion``.
    func finishUnit() {
        guard completeUnit(), tracker.complete(at: offset) != nil else { return }
        tracker.completion.positionAdvanced(tracker)
    }
}

/// What a run does when an event's completion advances its partition's commit position (store the position; resume
/// the partition if it was paused). Made once per run and shared by its tickets: one reference per event, where
/// each acknowledgement used to capture the pipeline and its consumer.
final class EventCompletion: Sendable {
    let positionAdvanced: @Sendable (PartitionProgress) -> Void

    /// - Parameter positionAdvanced: called with the tracker, on whichever thread completed the event.
    init(whenPositionAdvances positionAdvanced: @escaping @Sendable (PartitionProgress) -> Void = { _ in }) {
        self.positionAdvanced = positionAdvanced
    }
}
