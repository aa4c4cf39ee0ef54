import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
@testable import PlatformSinks
import PushSinks
import SinkTestSupport
import Testing

/// A plain HTTP/1.1 server that answers a request with its head at once, then a body of `bodyLength` spaces, one
/// every `interval`: a server (or proxy) trickling its answer.
private final class TrickleHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let bodyLength: Int
    let interval: TimeAmount
    private var received: [UInt8] = []
    private var isAnswered = false

    init(bodyLength: Int, interval: TimeAmount) {
        self.bodyLength = bodyLength
        self.interval = interval
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        let text = String(decoding: received, as: UTF8.self)
        guard !isAnswered, let headEnd = text.range(of: "\r\n\r\n") else { return }
        let length = text[..<headEnd.lowerBound].lowercased().split(separator: "\r\n")
            .first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        guard text[headEnd.upperBound...].utf8.count >= length else { return }
        isAnswered = true
        let channel = context.channel
        channel.writeAndFlush(ByteBuffer(string: "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(bodyLength)\r\n\r\n"), promise: nil)
        for index in 0..<bodyLength {
            channel.eventLoop.scheduleTask(in: interval * Int64(index + 1)) {
                channel.writeAndFlush(ByteBuffer(string: " "), promise: nil)
            }
        }
    }
}

@Suite("The sinks' HTTP client: one deadline per request, no redirects, bounded Retry-After", .timeLimit(.minutes(2)))
struct SinkHTTPClientTests {
    /// Found by review: async-http-client's timeout ends once the head has come, and a body trickled a byte at a time
    /// (each well within the read timeout) held the send, and one of the sink's request slots, for as long as it went on.
    @Test("the request timeout covers the whole answer, body included")
    func trickledBody() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // A byte every 250 ms for 40 s: with a byte a second, a pause past 2 s under CI's load once let the
                    // read timeout (2 s, per read) end the send before the request's deadline did.
                    try channel.pipeline.syncOperations.addHandler(TrickleHandler(bodyLength: 160, interval: .milliseconds(250)))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        var connection = HTTPSinkConnection()
        connection.requestTimeout = .seconds(2)
        let client = try SinkHTTPClient(connection: connection, concurrency: 1, configurationKey: "fcm")
        let start = ContinuousClock.now
        let outcome: String
        do {
            let reply = try await client.send(.POST, "http://127.0.0.1:\(port)/v1/projects/p/messages:send", headers: [], body: Array("{}".utf8))
            outcome = "status \(reply.status), \(reply.body.count) body bytes"
        } catch {
            outcome = "\(error)"
        }
        let took = ContinuousClock.now - start
        await client.shutdown()
        // Well before the body's end, with room for a loaded machine's scheduling (a quiet one takes about 2 s).
        #expect(took < .seconds(20), "a 2 s request timeout; the send took \(took), the body being 40 s long")
        // The request's deadline ends it; on a machine stalled for more than 2 s between two of the bytes (a full
        // test run on CI's two cores once), the per-read timeout comes first, which ends it as early.
        #expect(outcome.contains("deadlineExceeded") || outcome.contains("readTimeout"), "\(outcome)")
    }

    /// Found by review: a 302 was followed as a GET without the payload, and the 200 it ended at read as delivered.
    @Test("a redirect from APNs is not followed, and the send is not delivered: the detail names where it pointed")
    func apnsRedirect() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        apns.answers.script("0badc0de", [StubResponse(status: 302, headers: [(name: "location", value: "/portal")])])
        apns.answers.setFallback(StubResponse(status: 200))
        let sender = try APNsSender(apns.configuration, environment: [:])
        let failure = await sender.attempt(try sample("basic-apns", 1, token: "0badc0de"))
        await sender.shutdown()
        #expect(apns.server.requests.map(\.path) == ["/3/device/0badc0de"], "one request, not followed")
        let reason = try #require(failure)
        #expect(reason.code == .unavailable)
        #expect(reason.detail.contains("302, a redirect to /portal"), "\(reason.detail)")
        #expect(reason.detail.contains("apns.baseUrl"), "\(reason.detail)")
    }

    /// Found by review: a 307 from the token endpoint re-posted the signed assertion, a credential for an hour, to
    /// whatever origin it named.
    @Test("a redirect from the token endpoint is not followed: the assertion goes nowhere else, and the sink stops naming fcm.tokenUrl")
    func tokenEndpointRedirect() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let elsewhere = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http1) { _ in
            .json(200, #"{"access_token":"stolen","expires_in":3600}"#)
        }
        defer { Task { try? await elsewhere.shutdown() } }
        fcm.scriptTokenEndpoint([StubResponse(status: 307, headers: [(name: "location", value: "\(elsewhere.baseURL)/collect")])])
        let sender = try FCMSender(fcm.configuration, environment: [:])
        let failure = await sender.attempt(try sample("basic-fcm", 1, token: "t1"))
        await sender.shutdown()
        #expect(elsewhere.requests.isEmpty, "posted elsewhere: \(elsewhere.requests.map(\.path))")
        let reason = try #require(failure)
        #expect(reason.code == .auth)
        #expect(reason.detail.contains("307, a redirect to \(elsewhere.baseURL)/collect"), "\(reason.detail)")
        #expect(reason.detail.contains("fcm.tokenUrl"), "\(reason.detail)")
    }

    /// Found by review: `Retry-After: 9223372036854775807` became a wait no `Duration` arithmetic survives.
    @Test("Retry-After: seconds and HTTP dates, at most a day")
    func retryAfter() {
        func reply(_ value: String) -> HTTPReply {
            HTTPReply(status: 429, headers: HTTPHeaders([("retry-after", value)]), body: [])
        }
        let now = Date(timeIntervalSince1970: 1_445_412_470)  // Wed, 21 Oct 2015 07:27:50 GMT
        #expect(reply("7").retryAfter(now: now) == .seconds(7))
        #expect(reply("-3").retryAfter(now: now) == .zero)
        #expect(reply("Wed, 21 Oct 2015 07:28:00 GMT").retryAfter(now: now) == .seconds(10))
        #expect(reply("Wed, 21 Oct 2015 07:27:00 GMT").retryAfter(now: now) == .zero)
        #expect(reply("9223372036854775807").retryAfter(now: now) == .seconds(86_400))
        #expect(reply("Fri, 31 Dec 9999 23:59:59 GMT").retryAfter(now: now) == .seconds(86_400))
        #expect(reply("soon").retryAfter(now: now) == nil)
    }
}
