import Foundation
import Synchronization

/// Which sends partitions' timers this instance fires, and its expiries in flight, so that a timer fires on one
/// instance only while its partition moves between instances.
///
/// A timer's `push.expired`, then its tombstone, are written by the instance that owns the send's partition; every
/// other instance drops the timer when it reads the tombstone. The partition's next owner would fire the timer again
/// if the tombstone were not written yet, or not read there yet. So a partition being revoked fires nothing more and
/// waits, at most a bound, until the tombstones of its expiries in flight are acknowledged
/// (``fence(_:until:)``: the group's rebalance waits for it), and a partition newly assigned fires only once its
/// timers partition has been read to its end since (``startCatchUp(among:)``, ``markReady(_:generation:)``).
final class TimerFiring: Sendable {
    private struct State {
        /// Per partition, the assignment generation under which its timers partition was read to its end.
        var ready: [Int32: Int] = [:]
        /// Per partition, the assignment generation under which its timers partition is being read to its end.
        var catchingUp: [Int32: Int] = [:]
        /// Per partition, the expiries fired whose tombstone is not acknowledged yet.
        /// (By the assignment generation they were fired under: the late acknowledgement of one a fence gave up on
        /// does not count as a later one's.)
        var inFlight: [Int32: [Int: Int]] = [:]
    }

    private let state = Mutex(State())

    /// Those of `assigned` (partition → assignment generation) neither ready to fire under their generation nor being
    /// read to their end for it: their timers partition is to be read to its end first; they now count as being read
    /// (until ``markReady(_:generation:)``).
    func startCatchUp(among assigned: [Int32: Int]) -> [Int32: Int] {
        state.withLock { state in
            let due = assigned.filter { state.ready[$0.key] != $0.value && state.catchingUp[$0.key] != $0.value }
            for (partition, generation) in due { state.catchingUp[partition] = generation }
            return due
        }
    }

    /// Notes that the timers partition of `partition`, found assigned under `generation`, was read to its end (or
    /// could not be in time: it fires all the same, rather than never): its timers fire from now on, while that
    /// generation lasts.
    func markReady(_ partition: Int32, generation: Int) {
        state.withLock { state in
            // A catch-up of an earlier generation ending after a later one's leaves the later one in place.
            if state.ready[partition].map({ $0 < generation }) ?? true { state.ready[partition] = generation }
            if state.catchingUp[partition] == generation { state.catchingUp[partition] = nil }
        }
    }

    /// The due timers `take` returns for the partitions ready to fire, each with the assignment generation it is
    /// fired under, counted in flight until ``tombstoned(_:generation:)``.
    ///
    /// `assigned` (partition → generation) is asked while the firing is held: a partition being revoked has left the
    /// assignment before ``fence(_:until:)`` runs, so its expiries are either counted before the fence looks at them,
    /// or not fired here.
    func takeDue(
        assigned: () -> [Int32: Int],
        _ take: (Set<Int32>) -> [TimerBook.PendingTimer]
    ) -> [(timer: TimerBook.PendingTimer, generation: Int)] {
        state.withLock { state in
            let ready = state.ready
            let firing = assigned().filter { ready[$0.key] == $0.value }
            guard !firing.isEmpty else { return [] }
            return take(Set(firing.keys)).map { timer in
                let generation = firing[timer.partition] ?? 0
                state.inFlight[timer.partition, default: [:]][generation, default: 0] += 1
                return (timer, generation)
            }
        }
    }

    /// Notes that the tombstone of an expiry fired for `partition` under `generation` was acknowledged.
    func tombstoned(_ partition: Int32, generation: Int) {
        state.withLock { state in
            guard let count = state.inFlight[partition]?[generation] else { return }
            state.inFlight[partition]?[generation] = count > 1 ? count - 1 : nil
            if state.inFlight[partition]?.isEmpty == true { state.inFlight[partition] = nil }
        }
    }

    /// How many expiries of `partition` are in flight (for tests).
    func inFlight(of partition: Int32) -> Int {
        state.withLock { $0.inFlight[partition]?.values.reduce(0, +) ?? 0 }
    }

    /// Stops firing the timers of `partitions`, which are being revoked, and waits until the tombstones of their
    /// expiries in flight are acknowledged, or `deadline` passes.
    ///
    /// Blocks the calling thread, checking every 5 ms: it runs on the consumer's poll thread, in the revocation
    /// (``KafkaConsumerConfiguration/willRevokePartitions``), never on a task.
    ///
    /// What is still in flight at the deadline is no longer counted: an expiry that cannot be written (refused for
    /// good, or retried for long) would otherwise hold every later revocation of its partition for the whole wait.
    ///
    /// - Returns: the partitions of `partitions` with expiries still in flight (none when all were tombstoned).
    func fence(_ partitions: Set<Int32>, until deadline: ContinuousClock.Instant) -> Set<Int32> {
        func pending() -> Set<Int32> {
            state.withLock { state in
                for partition in partitions {
                    state.ready[partition] = nil
                    state.catchingUp[partition] = nil
                }
                return partitions.filter { state.inFlight[$0] != nil }
            }
        }
        var left = pending()
        while !left.isEmpty, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
            left = pending()
        }
        state.withLock { state in
            for partition in left { state.inFlight[partition] = nil }
        }
        return left
    }
}
