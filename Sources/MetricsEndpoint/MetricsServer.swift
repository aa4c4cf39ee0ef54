public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import PipelineRuntime
public import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server for the pipeline's operators: `GET /metrics` (the Prometheus text of ``PrometheusText``),
/// `GET /healthz` (`ok` while the process runs: liveness) and `GET /readyz` (200 `ready` while the pipeline consumes
/// in its group, 503 with the reason otherwise: readiness); `HEAD` as `GET` without the body. Everything else is 404
/// (405, with `Allow`, for other methods on those paths). A connection that sends nothing for ``idleTimeout`` is
/// closed: a client that went away without closing it, or that opens connections and never asks anything, does not
/// keep them (and their file descriptors) for good. At most ``maxConnections`` are open at once (more are closed as
/// they come), so clients cannot take the file descriptors the Kafka clients need; and a connection whose client does
/// not read its answers is not read from until it does, so its answers cannot pile up in memory.
///
/// A swift-service-lifecycle `Service`: it listens until graceful shutdown, then closes its listener.
///
/// ```swift
/// let metrics = MetricsServer(host: "0.0.0.0", port: 9464, logger: logger, readiness: { pipeline.status.readiness }) {
///     PrometheusText.render(pipeline.statistics.snapshot, status: pipeline.status)
/// }
/// let group = ServiceGroup(services: [pipeline, metrics], logger: logger)
/// ```
public final class MetricsServer: Service {
    private let host: String
    private let port: Int
    private let logger: Logger
    private let metrics: @Sendable () -> String
    private let readiness: @Sendable () -> CampaignPipeline.Readiness
    /// How long a connection may send nothing (no request, or the rest of one) before it is closed.
    public let idleTimeout: Duration
    /// The most connections open at once; one more is closed as it comes.
    public let maxConnections: Int
    private let connections = ConnectionCount()
    private let bound = Mutex<Int?>(nil)
    private let listener = Mutex<(any Channel)?>(nil)

    /// A server that will listen on `host`:`port` (port 0: any free port, see ``boundPort``) and answer
    /// `/metrics` with what `metrics` returns at each request, and `/readyz` as `readiness` says (always ready when
    /// not given). A connection that sends nothing for `idleTimeout` (90 s: longer than the usual scrape intervals,
    /// so a scraper's kept-alive connection is reused) is closed, and at most `maxConnections` (32: a few scrapers and
    /// probes) are open at once.
    public init(
        host: String,
        port: Int,
        logger: Logger,
        idleTimeout: Duration = .seconds(90),
        maxConnections: Int = 32,
        readiness: @escaping @Sendable () -> CampaignPipeline.Readiness = { .ready },
        metrics: @escaping @Sendable () -> String
    ) {
        self.host = host
        self.port = port
        self.logger = logger
        self.idleTimeout = idleTimeout
        self.maxConnections = max(1, maxConnections)
        self.readiness = readiness
        self.metrics = metrics
    }

    /// Why an address could not be listened on, in words: NIO's `IOError` says "bind(descriptor:ptr:bytes:): Address
    /// already in use) (errno: 98)" (an operator's trial).
    static func reason(_ error: any Error) -> String {
        guard let error = error as? IOError else { return "\(error)" }
        switch error.errnoCode {
        case EADDRINUSE: return "the port is in use (errno \(error.errnoCode))"
        case EACCES: return "permission denied: a port below 1024 needs privileges (errno \(error.errnoCode))"
        case EADDRNOTAVAIL: return "not an address of this machine (errno \(error.errnoCode))"
        default: return "\(error)"
        }
    }

    /// The port listened on, once listening.
    public var boundPort: Int? { bound.withLock { $0 } }

    /// Starts listening now, so that an address that cannot be used is reported before anything else starts;
    /// ``run()`` then serves on it. Calling it again does nothing.
    ///
    /// - Throws: ``MetricsServerError`` when the address cannot be listened on (in use, not local).
    public func listen() async throws {
        guard listener.withLock({ $0 }) == nil else { return }
        let channel: any Channel
        do {
            channel = try await bind()
        } catch {
            // No such name, or not an address of this machine.
            let isAboutHost =
                error is SocketAddressError || error is SocketAddressError.UnknownHost || (error as? IOError)?.errnoCode == EADDRNOTAVAIL
            throw MetricsServerError(description: "cannot serve metrics on \(host):\(port): \(Self.reason(error))", isAboutHost: isAboutHost)
        }
        listener.withLock { $0 = channel }
        let port = channel.localAddress?.port ?? port
        bound.withLock { $0 = port }
        logger.info("Serving metrics", metadata: ["address": "http://\(urlAuthority(host: host, port: port))/metrics"])
    }

    /// Listens (unless ``listen()`` already does) until graceful shutdown or cancellation, then closes the listener.
    ///
    /// - Throws: ``MetricsServerError`` when the address cannot be listened on (in use, not local).
    public func run() async throws {
        try await listen()
        try? await gracefulShutdown()
        try? await listener.withLock({ $0 })?.close()
    }

    private func bind() async throws -> any Channel {
        let metrics = self.metrics
        let readiness = self.readiness
        let idleTimeout = TimeAmount(self.idleTimeout)
        let connections = self.connections
        let maxConnections = self.maxConnections
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let open = connections.opened()
                channel.closeFuture.whenComplete { _ in connections.closed() }
                guard open <= maxConnections else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    // Reads stop while the answers already written wait for the client to read them.
                    try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    // After the decoder: bytes that never make a whole request do not count as reading.
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(metrics: metrics, readiness: readiness))
                }
            }
            .bind(host: host, port: port)
            .get()
    }
}

/// The connections open now.
private final class ConnectionCount: Sendable {
    private let count = Atomic<Int>(0)

    /// Counts one more open; returns how many are open with it.
    func opened() -> Int {
        count.wrappingAdd(1, ordering: .relaxed).newValue
    }

    func closed() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }
}

/// Why the metrics endpoint could not start.
public struct MetricsServerError: Error, CustomStringConvertible {
    public var description: String
    /// The host is what could not be listened on (no such name, or not an address of this machine), not the port.
    public var isAboutHost = false
}

/// Answers one request at a time on one connection (HTTP/1.1 keep-alive as the client asks).
final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let metrics: @Sendable () -> String
    private let readiness: @Sendable () -> CampaignPipeline.Readiness
    private var head: HTTPRequestHead?

    init(metrics: @escaping @Sendable () -> String, readiness: @escaping @Sendable () -> CampaignPipeline.Readiness) {
        self.metrics = metrics
        self.readiness = readiness
    }

    /// A request NIO's decoder could not read: it has answered `400` with `Connection: close`; the connection is
    /// closed here, not held until the idle timeout.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    /// Closes a connection the ``IdleStateHandler`` found idle.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = Self.path(of: head.uri)
        let plain = "text/plain; charset=utf-8"
        let (status, contentType, text): (HTTPResponseStatus, String, String)
        let isHead = head.method == .HEAD
        switch (isHead ? .GET : head.method, path) {
        case (.GET, "/metrics"): (status, contentType, text) = (.ok, PrometheusText.contentType, metrics())
        case (.GET, "/healthz"): (status, contentType, text) = (.ok, plain, "ok\n")
        case (.GET, "/readyz"):
            switch readiness() {
            case .ready: (status, contentType, text) = (.ok, plain, "ready\n")
            case .notReady(let reason): (status, contentType, text) = (.serviceUnavailable, plain, "not ready: \(reason)\n")
            }
        case (_, "/metrics"), (_, "/healthz"), (_, "/readyz"): (status, contentType, text) = (.methodNotAllowed, plain, "GET or HEAD only\n")
        default: (status, contentType, text) = (.notFound, plain, "not found: try /metrics, /healthz or /readyz\n")
        }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: contentType)
        headers.add(name: "content-length", value: String(text.utf8.count))
        if status == .methodNotAllowed { headers.add(name: "allow", value: "GET, HEAD") }
        let keepAlive = head.isKeepAlive
        headers.add(name: "connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        // A HEAD answer is the GET's head: the same length, no body.
        if !isHead { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil) }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        if !keepAlive {
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// The path of a request target, without its query: in origin form (`/metrics?x`) or absolute form
    /// (`http://host:9464/metrics`, which an HTTP/1.1 server must accept).
    static func path(of target: String) -> String {
        var rest = Substring(target)
        if !rest.hasPrefix("/"), let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            rest = rest[rest.index(colon, offsetBy: 3)...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        return String(rest.prefix { $0 != "?" })
    }
}
