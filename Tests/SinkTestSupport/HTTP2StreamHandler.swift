import NIOCore
import NIOHPACK
import NIOHTTP2

/// Collects the request on one HTTP/2 stream and answers it with the server's handler.
///
/// Each stream has its own handler and child channel, so streams are served concurrently.
final class HTTP2StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let core: ServerCore
    private let connectionID: Int
    private var requestHeaders: HPACKHeaders?
    private var body: [UInt8] = []
    private var isDispatched = false

    init(core: ServerCore, connectionID: Int) {
        self.core = core
        self.connectionID = connectionID
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            // The first HEADERS frame is the request; a later one would be trailers, which tests don't need.
            if requestHeaders == nil {
                requestHeaders = frame.headers
            }
            if frame.endStream {
                dispatch(context: context)
            }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data {
                body.append(contentsOf: buffer.readableBytesView)
            }
            if frame.endStream {
                dispatch(context: context)
            }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func dispatch(context: ChannelHandlerContext) {
        guard !isDispatched, let requestHeaders else { return }
        isDispatched = true
        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        for (name, value, _) in requestHeaders {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case _ where name.hasPrefix(":"): break
            default: headers.append((name: name, value: value))
            }
        }
        let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)).map { Int($0) }
        let request = RecordedRequest(
            method: method,
            path: path,
            headers: headers,
            body: body,
            httpVersion: "HTTP/2",
            connectionID: connectionID,
            streamID: streamID
        )
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let core = self.core
        let connectionID = self.connectionID
        core.dispatch(request, on: context.eventLoop) { response in
            // A stream above the last one a GOAWAY promised to process was, by HTTP/2's rules, never processed:
            // it gets no answer (the client has already given it up and may send it again).
            if let streamID, core.isBeyondGoAway(streamID: streamID, connectionID: connectionID) {
                boundContext.value.close(promise: nil)
                return
            }
            Self.write(response, context: boundContext.value)
        }
    }

    private static func write(_ response: StubResponse, context: ChannelHandlerContext) {
        let channel = context.channel
        guard channel.isActive else { return }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(response.status))
        for header in response.headers {
            headers.add(name: header.name.lowercased(), value: header.value)
        }
        if !headers.contains(name: "content-length") {
            headers.add(name: "content-length", value: String(response.body.count))
        }
        let hasBody = !response.body.isEmpty
        let head = HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: !hasBody))
        context.write(NIOAny(head), promise: nil)
        if hasBody {
            let buffer = channel.allocator.buffer(bytes: response.body)
            let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true))
            context.write(NIOAny(data), promise: nil)
        }
        context.flush()
    }
}
