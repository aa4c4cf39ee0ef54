import NIOCore
import NIOHTTP1

/// Collects HTTP/1 requests on one connection and answers each with the server's handler.
///
/// NIO's pipelining helper (added by `configureHTTPServerPipeline`) holds back pipelined requests until the previous
/// response is written, so one connection serves one request at a time, as in HTTP/1.1.
final class HTTP1RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let core: ServerCore
    private let connectionID: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(core: ServerCore, connectionID: Int) {
        self.core = core
        self.connectionID = connectionID
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            self.head = nil
            dispatch(head: head, body: body, context: context)
            body = []
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func dispatch(head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) {
        let request = RecordedRequest(
            method: head.method.rawValue,
            path: head.uri,
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            body: body,
            httpVersion: "HTTP/\(head.version.major).\(head.version.minor)",
            connectionID: connectionID
        )
        let version = head.version
        let keepAlive = head.isKeepAlive
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        core.dispatch(request, on: context.eventLoop) { response in
            Self.write(response, version: version, keepAlive: keepAlive, context: boundContext.value)
        }
    }

    private static func write(
        _ response: StubResponse,
        version: HTTPVersion,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        let channel = context.channel
        guard channel.isActive else { return }
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        if !headers.contains(name: "content-length") && !headers.contains(name: "transfer-encoding") {
            headers.add(name: "content-length", value: String(response.body.count))
        }
        if !keepAlive {
            headers.replaceOrAdd(name: "connection", value: "close")
        }
        let head = HTTPResponseHead(
            version: version,
            status: HTTPResponseStatus(statusCode: response.status),
            headers: headers
        )
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        if !response.body.isEmpty {
            let buffer = channel.allocator.buffer(bytes: response.body)
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        }
        let written = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
        if !keepAlive {
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
