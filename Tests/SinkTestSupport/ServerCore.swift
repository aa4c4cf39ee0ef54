import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The shared, thread-safe part of a ``LocalHTTPServer``: its listener, open connections and records.
///
/// Channel handlers hold it to record requests and run the handler; all mutable state sits in one `Mutex`.
final class ServerCore: Sendable {
    struct State {
        var port: Int = 0
        var listener: (any Channel)?
        /// True from the start of binding until ``stop()``; connections that race with ``stop()`` are refused.
        var isAcceptingConnections = false
        var isShutDown = false
        var openConnections: [Int: any Channel] = [:]
        var requests: [RecordedRequest] = []
        var connectionsAccepted = 0
        var inFlight = 0
        var peakInFlight = 0
        /// The highest HTTP/2 stream received on each connection.
        var highestStreamID: [Int: Int] = [:]
        /// The last stream id each connection's GOAWAY announced (the streams the server processes).
        var goAwayLastStreamID: [Int: Int] = [:]
    }

    let sslContext: NIOSSLContext?
    let wireProtocol: LocalHTTPServer.WireProtocol
    private let handler: @Sendable (RecordedRequest) async -> StubResponse
    private let state = Mutex(State())

    init(
        sslContext: NIOSSLContext?,
        wireProtocol: LocalHTTPServer.WireProtocol,
        handler: @escaping @Sendable (RecordedRequest) async -> StubResponse
    ) {
        self.sslContext = sslContext
        self.wireProtocol = wireProtocol
        self.handler = handler
    }

    var port: Int {
        snapshot { $0.port }
    }

    func snapshot<Value>(_ read: (State) -> Value) -> Value {
        state.withLock { read($0) }
    }

    // MARK: - Listening

    func listen(port: Int) async throws {
        let mayListen = try state.withLock { state -> Bool in
            guard !state.isShutDown else {
                throw SinkTestSupportError("the server was shut down; start a new one instead of restarting it")
            }
            // Already listening, or another call is binding right now.
            guard state.listener == nil, !state.isAcceptingConnections else { return false }
            state.isAcceptingConnections = true
            return true
        }
        guard mayListen else { return }

        let listener: any Channel
        do {
            listener = try await bindListener(port: port)
        } catch {
            state.withLock { $0.isAcceptingConnections = false }
            throw error
        }
        let stoppedWhileBinding = state.withLock { state -> Bool in
            state.port = listener.localAddress?.port ?? port
            guard state.isAcceptingConnections else { return true }
            state.listener = listener
            return false
        }
        if stoppedWhileBinding {
            try? await listener.close()
        }
    }

    /// Ports a server started without one listens on: below the kernel's ephemeral range (32768–60999 on Linux by
    /// default), from which outgoing connections and listeners on port 0 are given theirs. A server keeps its port
    /// across ``LocalHTTPServer/stop()`` and ``LocalHTTPServer/restart()``; one from the ephemeral range could be
    /// taken meanwhile by any connection of a parallel test run (a restart once failed with "Address already in use").
    static let portsOfOurOwn = 20_000..<32_768

    /// Binds a listener on `port`; for port 0, on a free port of ``portsOfOurOwn`` tried at random (then on one the
    /// kernel picks, should 32 of them be taken).
    private func bindListener(port: Int) async throws -> any Channel {
        let candidates = port == 0 ? (0..<32).map { _ in Int.random(in: Self.portsOfOurOwn) } + [0] : [port]
        var lastError: (any Error)?
        for candidate in candidates {
            do {
                return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .serverChannelOption(.backlog, value: 256)
                    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                    .childChannelInitializer { [self] channel in
                        channel.eventLoop.makeCompletedFuture {
                            try self.initializeConnection(channel)
                        }
                    }
                    .bind(host: "127.0.0.1", port: candidate)
                    .get()
            } catch {
                lastError = error
            }
        }
        throw SinkTestSupportError("could not listen on 127.0.0.1:\(port): \(lastError.map { "\($0)" } ?? "no port tried")")
    }

    func stop() async throws {
        let (listener, connections) = state.withLock { state in
            state.isAcceptingConnections = false
            let listener = state.listener
            state.listener = nil
            return (listener, Array(state.openConnections.values))
        }
        var closeError: (any Error)?
        if let listener {
            do {
                try await listener.close()
            } catch ChannelError.alreadyClosed {
                // Nothing to do.
            } catch {
                closeError = error
            }
        }
        for connection in connections {
            // Closing an already closed connection fails; that is fine here.
            try? await connection.close()
        }
        if let closeError {
            throw SinkTestSupportError("could not close the listening socket: \(closeError)")
        }
    }

    func shutdown() async throws {
        state.withLock { $0.isShutDown = true }
        try await stop()
    }

    /// Sends a GOAWAY frame on every open HTTP/2 connection, announcing as processed every stream received on it
    /// but its last `unprocessed` ones; returns the last stream id announced per connection.
    func goAway(leavingUnprocessed unprocessed: Int) async throws -> [Int: Int] {
        guard wireProtocol == .http2 else { throw SinkTestSupportError("GOAWAY is an HTTP/2 frame: this server speaks HTTP/1.1") }
        let announced = state.withLock { state -> [(any Channel, Int, Int)] in
            state.openConnections.map { connectionID, channel in
                let highest = state.highestStreamID[connectionID] ?? 0
                let last = max(0, highest - 2 * unprocessed)
                state.goAwayLastStreamID[connectionID] = last
                return (channel, connectionID, last)
            }
        }
        var result: [Int: Int] = [:]
        for (channel, connectionID, last) in announced {
            let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: HTTP2StreamID(last), errorCode: .noError, opaqueData: nil))
            try await channel.writeAndFlush(frame)
            result[connectionID] = last
        }
        return result
    }

    /// Whether `streamID` of the connection is above the last stream its GOAWAY announced.
    func isBeyondGoAway(streamID: Int, connectionID: Int) -> Bool {
        state.withLock { state in state.goAwayLastStreamID[connectionID].map { streamID > $0 } ?? false }
    }

    // MARK: - Connections

    /// Sets up a newly accepted connection's pipeline. Runs on the connection's event loop.
    private func initializeConnection(_ channel: any Channel) throws {
        let connectionID = try state.withLock { state -> Int in
            guard state.isAcceptingConnections else {
                throw SinkTestSupportError("the server is stopped")
            }
            state.connectionsAccepted += 1
            let connectionID = state.connectionsAccepted
            state.openConnections[connectionID] = channel
            return connectionID
        }
        channel.closeFuture.whenComplete { [self] _ in
            _ = state.withLock { $0.openConnections.removeValue(forKey: connectionID) }
        }

        let pipeline = channel.pipeline.syncOperations
        if let sslContext {
            try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
        }
        switch wireProtocol {
        case .http1:
            try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
            try pipeline.addHandler(HTTP1RequestHandler(core: self, connectionID: connectionID))
        case .http2:
            var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
            connectionConfiguration.initialSettings =
                nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
                + [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]
            _ = try pipeline.configureHTTP2Pipeline(
                mode: .server,
                connectionConfiguration: connectionConfiguration,
                streamConfiguration: NIOHTTP2Handler.StreamConfiguration()
            ) { [self] stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(
                        HTTP2StreamHandler(core: self, connectionID: connectionID)
                    )
                }
            }
        }
    }

    // MARK: - Requests

    /// Records a fully received request, then runs the handler in a new task and passes its response to `reply`
    /// on `eventLoop`.
    ///
    /// `reply` must check that the channel is still open: the connection may have closed meanwhile.
    func dispatch(
        _ request: RecordedRequest,
        on eventLoop: any EventLoop,
        reply: @escaping @Sendable (StubResponse) -> Void
    ) {
        state.withLock { state in
            state.requests.append(request)
            if let streamID = request.streamID {
                state.highestStreamID[request.connectionID] = max(state.highestStreamID[request.connectionID] ?? 0, streamID)
            }
            state.inFlight += 1
            state.peakInFlight = max(state.peakInFlight, state.inFlight)
        }
        let handler = self.handler
        Task { [self] in
            let response = await handler(request)
            eventLoop.execute { [self] in
                reply(response)
                // A request counts as being handled until its response is handed to the connection.
                state.withLock { $0.inFlight -= 1 }
            }
        }
    }
}
