import NIOCore
import NIOPosix
import NIOSSL

/// A local HTTP server on 127.0.0.1 for tests, standing in for Google's OAuth and FCM endpoints or APNs.
///
/// Every request is recorded (``requests``) and answered by the handler given to
/// ``start(tls:wireProtocol:port:handler:)``. Handlers run concurrently, one task per request or HTTP/2 stream.
/// ``stop()`` and ``restart()`` simulate an outage; ``shutdown()`` ends the server for good.
///
/// ```swift
/// let server = try await LocalHTTPServer.start(tls: try .makeLocalhost(), wireProtocol: .http2) { request in
///     .json(200, #"{"ok":true}"#)
/// }
/// do {
///     // … point the sink at server.baseURL, send, inspect server.requests …
///     try await server.shutdown()
/// } catch {
///     try? await server.shutdown()
///     throw error
/// }
/// ```
public final class LocalHTTPServer: Sendable {
    /// The HTTP version the server speaks.
    public enum WireProtocol: Sendable {
        /// HTTP/1.1, over TLS (ALPN "http/1.1") or plain.
        case http1
        /// HTTP/2 over TLS with ALPN "h2" only, like APNs.
        case http2
    }

    private let core: ServerCore

    private init(core: ServerCore) {
        self.core = core
    }

    /// Starts listening on 127.0.0.1.
    ///
    /// - Parameters:
    ///   - tls: The server's identity, or nil for plain HTTP/1.1 (then `wireProtocol` must be ``WireProtocol/http1``).
    ///   - wireProtocol: ``WireProtocol/http2`` negotiates ALPN "h2" only; ``WireProtocol/http1`` negotiates
    ///     "http/1.1" only (or nothing, without TLS).
    ///   - port: The port; 0 picks a free one.
    ///   - handler: Called once per request, concurrently for concurrent requests and streams. It may sleep to
    ///     simulate a slow response.
    /// - Returns: The listening server. Call ``shutdown()`` when done.
    /// - Throws: ``SinkTestSupportError`` for plain HTTP/2 or an unusable identity, or the bind error.
    public static func start(
        tls: TestTLSIdentity?,
        wireProtocol: WireProtocol,
        port: Int = 0,
        handler: @escaping @Sendable (RecordedRequest) async -> StubResponse
    ) async throws -> LocalHTTPServer {
        let sslContext: NIOSSLContext?
        switch (tls, wireProtocol) {
        case (nil, .http2):
            throw SinkTestSupportError("HTTP/2 needs TLS: pass a TestTLSIdentity, or use .http1 for plain HTTP")
        case (nil, .http1):
            sslContext = nil
        case (let identity?, _):
            sslContext = try makeSSLContext(identity, wireProtocol: wireProtocol)
        }
        let server = LocalHTTPServer(
            core: ServerCore(sslContext: sslContext, wireProtocol: wireProtocol, handler: handler)
        )
        try await server.core.listen(port: port)
        return server
    }

    /// The port the server listens on (the same across ``stop()`` and ``restart()``).
    public var port: Int {
        core.port
    }

    /// "https://localhost:<port>" with TLS (the certificate names localhost), "http://127.0.0.1:<port>" without.
    public var baseURL: String {
        core.sslContext == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)"
    }

    /// Every request received so far, in arrival order.
    ///
    /// A request is recorded once it has fully arrived, before the handler is called.
    public var requests: [RecordedRequest] {
        core.snapshot { $0.requests }
    }

    /// The number of connections accepted so far, across restarts.
    public var connectionsAccepted: Int {
        core.snapshot { $0.connectionsAccepted }
    }

    /// The highest number of requests that were being handled at the same time.
    ///
    /// A request counts from its arrival until its response is handed to the connection; use this to prove
    /// HTTP/2 concurrency. With a handler that answers at once the count depends on timing, so give the handler a
    /// short sleep when a test asserts on it.
    public var peakConcurrentRequests: Int {
        core.snapshot { $0.peakInFlight }
    }

    /// Simulates an outage: stops listening and closes every open connection.
    ///
    /// In-flight requests get no response: their connections are closed under them, and the handlers' answers are
    /// dropped when they come. Does nothing if the server is already stopped.
    ///
    /// - Throws: Errors from closing the listening socket.
    public func stop() async throws {
        try await core.stop()
    }

    /// Listens again on the same port, with the same handler; requests and counters keep accumulating.
    ///
    /// Does nothing if the server is listening.
    ///
    /// - Throws: ``SinkTestSupportError`` after ``shutdown()``, or the bind error.
    public func restart() async throws {
        try await core.listen(port: core.port)
    }

    /// Ends every open HTTP/2 connection gracefully, as APNs does: sends a GOAWAY frame announcing as processed every
    /// stream received so far on the connection but its last `unprocessed` ones. Those get no answer (their streams
    /// are closed when their handlers finish); the others are answered as usual. The server keeps listening.
    ///
    /// - Parameter unprocessed: How many of each connection's last streams the GOAWAY leaves out.
    /// - Returns: The last stream id announced, per connection id.
    /// - Throws: ``SinkTestSupportError`` on an HTTP/1.1 server, or errors from writing the frame.
    @discardableResult
    public func goAway(leavingUnprocessed unprocessed: Int = 0) async throws -> [Int: Int] {
        try await core.goAway(leavingUnprocessed: unprocessed)
    }

    /// Stops the server for good, like ``stop()``; later calls do nothing.
    ///
    /// - Throws: Errors from closing the listening socket.
    public func shutdown() async throws {
        try await core.shutdown()
    }

    private static func makeSSLContext(
        _ identity: TestTLSIdentity,
        wireProtocol: WireProtocol
    ) throws -> NIOSSLContext {
        do {
            let certificate = try NIOSSLCertificate(bytes: Array(identity.certificatePEM.utf8), format: .pem)
            let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(certificate)],
                privateKey: .privateKey(key)
            )
            switch wireProtocol {
            case .http1: configuration.applicationProtocols = ["http/1.1"]
            case .http2: configuration.applicationProtocols = ["h2"]
            }
            // An outage should not wait for the client's close_notify.
            configuration.shutdownTimeout = .milliseconds(100)
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw SinkTestSupportError("could not make a TLS server context from the test identity: \(error)")
        }
    }
}
