import Foundation
import Glibc
import KafkaClient
import Synchronization
import Testing

@Suite("Embedded broker: commands to the cluster")
struct EmbeddedKafkaTests {
    /// librdkafka 2.0.2's mock cluster thread can miss the wake-up of a command sent while it serves another one, and
    /// then serves it only at its next one-second tick. Commands from several threads at once hit that often; each
    /// one is served at once when the thread is woken while the command waits.
    @Test("topics created from four threads at once are each created without waiting for the cluster's tick")
    func concurrentCommandsAreServedAtOnce() async throws {
        let kafka = try EmbeddedKafka(brokers: 1, logger: testLogger)
        defer { kafka.shutdown() }
        let results = Results()
        await onFourThreads { worker in
            for index in 0..<25 {
                results.record {
                    let start = ContinuousClock.now
                    try kafka.createTopic("topic-\(worker)-\(index)", partitions: 1)
                    return ContinuousClock.now - start
                }
            }
        }
        #expect(results.failures.withLock { $0 }.isEmpty)
        // Without the wake-ups, 21 to 58 of them waited for the one-second tick; a woken thread answers within
        // milliseconds, but the parallel test run's load can make one take a second.
        #expect(results.secondOrMore < 5, "topic creations of 100 that took a second or more")
    }

    /// The destroy command missed its wake-up as often as other commands, and librdkafka's destruction then joins an
    /// internal broker thread, which can take a second more; shutting down waits only until the brokers are gone.
    @Test("shutting a cluster down returns once its brokers are gone, without waiting for the cluster's tick")
    func shutdownReturnsOnceTheBrokersAreGone() async throws {
        let results = Results()
        // Four threads at once, as in the parallel test run: the missed wake-ups need a busy machine.
        await onFourThreads { _ in
            for _ in 0..<25 { results.record { try Self.createAndShutDown() } }
        }
        #expect(results.failures.withLock { $0 }.isEmpty)
        // Without the wake-ups, 22 to 25 of them waited for the tick.
        #expect(results.secondOrMore < 4, "shutdowns of 100 that took a second or more")
    }

    /// Starts a two-broker cluster, creates a topic, shuts the cluster down and checks that its brokers are gone;
    /// returns how long the shutdown took.
    private static func createAndShutDown() throws -> Duration {
        let kafka = try EmbeddedKafka(brokers: 2, logger: testLogger)
        try kafka.createTopic("topic", partitions: 2)
        let start = ContinuousClock.now
        kafka.shutdown()
        let took = ContinuousClock.now - start
        for server in kafka.bootstrapServers.split(separator: ",") {
            guard let port = server.split(separator: ":").last.flatMap({ UInt16($0) }), !takesConnections(port) else {
                throw KafkaError(code: .embeddedBrokerFailed, message: "\(server) still takes connections after the shutdown")
            }
        }
        return took
    }

    /// Runs `body` on four threads of its own at once (the calls block until the cluster's thread answers), passing
    /// each its number, and returns when all four have.
    private func onFourThreads(_ body: @escaping @Sendable (Int) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        Thread.detachNewThread {
                            body(worker)
                            continuation.resume()
                        }
                    }
                }
            }
        }
    }

    /// Whether something listens on `port` of the loopback address.
    private static func takesConnections(_ port: UInt16) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// How long timed calls made from several threads took, and the errors they threw.
    private final class Results: Sendable {
        let durations = Mutex<[Duration]>([])
        let failures = Mutex<[String]>([])

        /// How many calls took a second or more: a command that waited for the cluster's tick.
        var secondOrMore: Int { durations.withLock { $0.filter { $0 >= .seconds(1) }.count } }

        func record(_ call: () throws -> Duration) {
            do {
                let took = try call()
                durations.withLock { $0.append(took) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
    }
}
