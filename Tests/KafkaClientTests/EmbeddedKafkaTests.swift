import Foundation
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

    /// Starts a two-broker cluster, creates a topic, shuts the cluster down and checks that this process no longer
    /// has its brokers' listeners; returns how long the shutdown took.
    ///
    /// The listeners are told apart by their sockets' inodes, not by their ports: a port freed by the shutdown can be
    /// bound at once by another cluster started by a thread or test running beside this one. (Found in CI: a listener
    /// still listening after the shutdown, most likely a copy held by a child process another test was starting.)
    private static func createAndShutDown() throws -> Duration {
        let kafka = try EmbeddedKafka(brokers: 2, logger: testLogger)
        try kafka.createTopic("topic", partitions: 2)
        let ports = Set(kafka.bootstrapServers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
        let listeners = try listeningSockets().filter { ports.contains($0.port) }
        guard Set(listeners.map(\.port)) == ports else {
            throw KafkaError(code: .embeddedBrokerFailed, message: "no listener found for some of \(kafka.bootstrapServers)")
        }
        let start = ContinuousClock.now
        kafka.shutdown()
        let took = ContinuousClock.now - start
        // Only this process's own: a process another test is starting (kcat, the command line, an exit test) holds
        // copies of this process's descriptors from its spawn until it runs its program (librdkafka marks the
        // listeners close-on-exec), and the shutdown cannot close those.
        let own = try ownSocketInodes()
        let stillListening = try listeningSockets().intersection(listeners).filter { own.contains($0.inode) }
        guard stillListening.isEmpty else {
            let servers = stillListening.map { "127.0.0.1:\($0.port)" }.sorted().joined(separator: ", ")
            throw KafkaError(code: .embeddedBrokerFailed, message: "\(servers) still listening after the shutdown")
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

    /// A listening TCP socket on the IPv4 loopback address: its port and its inode, which no other socket shares.
    private struct Listener: Hashable {
        let port: UInt16
        let inode: UInt64
    }

    /// The listening TCP sockets on 127.0.0.1, read from `/proc/net/tcp` (a line per socket: its local address as
    /// hexadecimal `address:port`, its state, `0A` for listening, and its inode in the tenth column). The file is read
    /// to its end: `String(contentsOfFile:)` reads only its first page, about 25 sockets.
    private static func listeningSockets() throws -> Set<Listener> {
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp"))
        defer { try? file.close() }
        let table = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        var listeners = Set<Listener>()
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ")
            guard columns.count > 9, columns[3] == "0A" else { continue }
            let local = columns[1].split(separator: ":")
            guard local.count == 2, local[0] == "0100007F", let port = UInt16(local[1], radix: 16),
                let inode = UInt64(columns[9])
            else { continue }
            listeners.insert(Listener(port: port, inode: inode))
        }
        return listeners
    }

    /// The inodes of the sockets this process has open (`/proc/self/fd`, whose links read `socket:[inode]`).
    private static func ownSocketInodes() throws -> Set<UInt64> {
        var inodes = Set<UInt64>()
        for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            // A descriptor closed since the listing has no link any more.
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                target.hasPrefix("socket:["), target.hasSuffix("]"), let inode = UInt64(target.dropFirst(8).dropLast())
            else { continue }
            inodes.insert(inode)
        }
        return inodes
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
