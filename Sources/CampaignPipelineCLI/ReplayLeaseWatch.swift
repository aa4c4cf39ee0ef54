import Logging
import PipelineRuntime
import ServiceLifecycle
import Synchronization

/// Stops a replay that loses its group's lease while it runs (``ReplayLease/lost()``): another replay of the group may
/// hold the lease by then, and a replay that went on would replay what that one replays (with `--deliver`, send to
/// phones twice). The replay stops as on SIGTERM (it stops reading and finishes what is in flight), but commits
/// nothing more: the group's progress is the other replay's now, and a commit of this one's would set it back.
///
/// A service of the replay's group, beside the pipeline: it stays until the group shuts down (a service that returns
/// ends the group, the pipeline's drain with it).
final class ReplayLeaseWatch: Service, Sendable {
    private let lease: ReplayLease
    private let pipeline: CampaignPipeline
    private let logger: Logger
    private let loss = Mutex<ReplayLeaseLost?>(nil)

    init(lease: ReplayLease, pipeline: CampaignPipeline, logger: Logger) {
        self.lease = lease
        self.pipeline = pipeline
        self.logger = logger
    }

    /// How the lease was lost, if it was.
    var lost: ReplayLeaseLost? { loss.withLock { $0 } }

    func run() async throws {
        let lease = self.lease
        if let lost = await cancelWhenGracefulShutdown({ await lease.lost() }) {
            loss.withLock { $0 = lost }
            pipeline.stopWithoutCommitting()
            logger.error("Stopping: \(lost)")
            // librdkafka rejoins a lost member by itself: left at once, so that a replay run again meanwhile (as the
            // error says to) is not refused for it.
            await lease.release()
        }
        // Until this service's turn in the group's shutdown, which comes after the pipeline has returned.
        try? await gracefulShutdown()
    }
}
