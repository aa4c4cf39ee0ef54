import CRdKafka
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc

private let streamSocketType = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin

private let streamSocketType = SOCK_STREAM
#endif

/// Commands to an embedded cluster's thread, and its destruction, without waiting for the thread's one-second tick.
///
/// librdkafka 2.0.2's mock cluster thread can sleep through a command. A command sent just after the previous
/// command's reply writes its wake-up byte while the thread is still serving, the thread then drains that byte with
/// the previous one, and its queue's "wake-up sent" flag stays set, so the command waits up to a second for the next
/// tick. Topics are created back to back, and a test run lost about 25 such seconds, each holding one of the
/// (two, here) threads of the cooperative pool; the destroy command missed its wake-up as often. A connection to a
/// broker's listener is an event the thread wakes for; awake, it serves its queue.
struct MockClusterCalls: Sendable {
    /// The brokers' loopback ports.
    let ports: [UInt16]

    /// How long a command may wait before the thread is woken, and then between wake-ups (10 ms).
    static let intervalMicroseconds: UInt32 = 10_000

    /// The ports of a mock cluster's `host:port,...` bootstrap list (its listeners are on the loopback address).
    init(bootstrapServers: String) {
        ports = bootstrapServers.split(separator: ",").compactMap { server in
            server.split(separator: ":").last.flatMap { UInt16($0) }
        }
    }

    /// Runs `command`, which waits for the cluster's thread, and connects to every broker's listener each
    /// ``intervalMicroseconds`` until it returns.
    func run<T>(_ command: () -> T) -> T {
        let finished = Flag()
        let ports = self.ports
        let waker = Thread {
            while true {
                usleep(Self.intervalMicroseconds)
                if finished.isSet { return }
                for port in ports { Self.knock(onLoopbackPort: port) }
            }
        }
        waker.name = "embedded-broker-wake-up"
        waker.start()
        defer { finished.set() }
        return command()
    }

    /// Destroys `cluster` on a thread of its own and returns once no broker of it takes a connection, or it is
    /// destroyed. The thread serves the destroy command and closes the brokers' listeners, then joins an internal
    /// broker thread of its own, which can take a second more; `handle`, whose client the cluster belongs to, is
    /// kept until then.
    func destroy(_ cluster: OpaquePointer, keepingAlive handle: RDKafkaHandle) {
        let finished = Flag()
        let cluster = ClusterPointer(pointer: cluster)
        let destroyer = Thread {
            rd_kafka_mock_cluster_destroy(cluster.pointer)
            withExtendedLifetime(handle) {}
            finished.set()
        }
        destroyer.name = "embedded-broker-destroy"
        destroyer.start()
        // Each connection taken also wakes the cluster's thread, should it have missed the command.
        while !finished.isSet, ports.contains(where: { Self.knock(onLoopbackPort: $0) }) {
            usleep(Self.intervalMicroseconds)
        }
    }

    /// Opens a TCP connection to `port` on the loopback address and closes it at once; whether it was taken. A
    /// broker that is down refuses it; the kernel completes the handshake for one that is up, whose listener then
    /// wakes its thread.
    @discardableResult
    private static func knock(onLoopbackPort port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, streamSocketType, 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                connect(descriptor, generic, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// A cluster handed to the thread that destroys it, and used by no one else after.
    private struct ClusterPointer: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Set once, read from another thread.
    private final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }
}
