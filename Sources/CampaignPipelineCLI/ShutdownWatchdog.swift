import Foundation
import Logging
import Synchronization
import UnixSignals

/// Bounds a graceful shutdown, which waits for work that may never finish (a blocked Kafka call while the brokers are
/// gone, a drain that outlives its timeout): from the first SIGTERM or SIGINT, the process exits with status 1 once
/// `limit` has passed, and at once on a second signal. Either way nothing more is committed, so the events not
/// finished are processed again after a restart, as after a crash.
///
/// Not a service of the group: a service the group waits for would hold up the ordinary end of a run.
final class ShutdownWatchdog: Sendable {
    /// What ends the process; replaced in tests.
    typealias Exit = @Sendable (_ status: Int32) -> Void

    private let limit: Duration
    private let logger: Logger
    private let exit: Exit
    private let signalsSeen = Mutex(0)

    /// - Parameters:
    ///   - limit: how long a shutdown may take from the first signal.
    ///   - exit: ends the process with the status (`Foundation.exit` unless testing).
    init(limit: Duration, logger: Logger, exit: @escaping Exit = { Foundation.exit($0) }) {
        self.limit = limit
        self.logger = logger
        self.exit = exit
    }

    /// Follows SIGTERM and SIGINT for as long as the process runs (a task of its own, never awaited).
    func start() {
        Task.detached { [self] in
            let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
            for await signal in signals { signalled("\(signal)") }
        }
    }

    /// One signal came: the first arms the deadline, the second ends the process.
    func signalled(_ name: String) {
        let count = signalsSeen.withLock { seen in
            seen += 1
            return seen
        }
        if count == 1 {
            // A thread, not a task: the deadline must pass even when the cooperative pool is stuck.
            let limit = limit
            let thread = Thread { [self] in
                Thread.sleep(forTimeInterval: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
                logger.critical(
                    "Shutdown did not finish within \(limit) of the first signal; exiting without the final commit (unfinished events are processed again after a restart)"
                )
                exit(1)
            }
            thread.name = "shutdown-watchdog"
            thread.start()
        } else if count == 2 {
            logger.critical(
                "Second signal (\(name)) during shutdown; exiting at once without the final commit (unfinished events are processed again after a restart)"
            )
            exit(1)
        }
    }
}
