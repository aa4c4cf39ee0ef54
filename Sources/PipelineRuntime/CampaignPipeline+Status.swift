import KafkaClient
import Synchronization

extension CampaignPipeline {
    /// Where a run is, for operators: the metrics endpoint's gauges and its readiness check (``readiness``).
    public struct Status: Sendable, Equatable {
        /// The steps of a run.
        public enum Phase: String, Sendable {
            /// Not running yet, or connecting, checking the topics and subscribing.
            case starting
            /// Reading and processing events.
            case consuming
            /// Asked to stop (or stopping by itself): draining what is in flight, committing, closing.
            case stopping
            /// The run is over.
            case stopped
        }

        /// The step the run is at.
        public var phase: Phase
        /// Whether the consumer is a member of its group: given an assignment by the group (possibly none, when the
        /// group has more instances than the sends topic has partitions), and not having lost it since (a session
        /// that timed out, while the brokers were unreachable, until the group assigns partitions again).
        public var hasJoinedGroup: Bool
        /// Partitions of the sends topic this instance reads now.
        public var assignedPartitions: Int
        /// Events read and not finished yet (not every output acknowledged).
        public var inFlightEvents: Int
        /// Delivered timer notifications whose countdown has not ended, in this instance's book (which holds every
        /// partition's; each fires on the instance that owns its partition).
        public var pendingTimers: Int
        /// Partitions of the sends topic this instance has paused for backpressure: their events wait on a sink
        /// the platform throttles, or `processing.maxInFlightPerPartition` of them are in flight.
        public var pausedPartitions: Int = 0
        /// The sinks (FCM, APNs) the platform throttles now; the partitions waiting on them are paused.
        public var throttledSinks: Int = 0
        /// librdkafka's name for the consumer group's refusal of this instance while it lasts (``KafkaError/isGroupRefusal``,
        /// `GROUP_AUTHORIZATION_FAILED`, …): the instance stops if it lasts `processing.groupRefusalSeconds`.
        public var groupRefusal: String? = nil
        /// Events of the sends topic's partitions this instance reads that are not finished, as last measured (every
        /// `processing.progressLogSeconds`): read and in flight, or not read yet. `nil` before the first measurement,
        /// when its look-ups failed and until the next one answers (``CampaignPipeline/measureLag(of:)``), in a replay,
        /// and unless consuming.
        public var consumerLag: Int? = nil

        /// Ready once consuming in the group: a deployment can count this instance as taking its share.
        public var readiness: Readiness {
            switch phase {
            case .starting: .notReady("starting")
            case .consuming:
                if let groupRefusal {
                    .notReady("the consumer group refuses this instance (\(groupRefusal)); it stops unless the group takes it")
                } else {
                    hasJoinedGroup ? .ready : .notReady("not in the consumer group (joining, or lost its session)")
                }
            case .stopping: .notReady("stopping")
            case .stopped: .notReady("stopped")
            }
        }
    }

    /// Whether an instance takes its share of the work, and if not, why.
    public enum Readiness: Sendable, Equatable {
        /// Consuming in its group.
        case ready
        /// Not consuming (yet, or any more), with the reason.
        case notReady(String)
    }

    /// The run's state now (made when asked: nothing is kept per event for it).
    public var status: Status {
        let (runPhase, hasJoinedGroup, assigned) = runState.withLock { ($0.phase, $0.hasJoinedGroup, $0.assignedPartitions) }
        let phase: Status.Phase = runPhase == .consuming && isStopping ? .stopping : runPhase
        return Status(
            phase: phase,
            hasJoinedGroup: hasJoinedGroup,
            assignedPartitions: assigned,
            inFlightEvents: totalInFlight(),
            pendingTimers: timers.count,
            pausedPartitions: progress.withLock { $0.values.count(where: \.isPaused) },
            throttledSinks: throttledSinks.withLock { $0.count },
            groupRefusal: groupRefusalWait.withLock { $0.pending.map { $0.librdkafkaName ?? $0.message } },
            // Not while stopping: the closing consumer's assignment is empty, and a measurement then finds nothing.
            consumerLag: phase == .consuming ? measuredLag.withLock { $0 } : nil
        )
    }

    /// What ``status`` reads that the run sets as it goes (stopping is the stop signal, not a phase kept here).
    struct RunState: Sendable {
        var phase: Status.Phase = .starting
        var hasJoinedGroup = false
        var assignedPartitions = 0
    }
}
