import AsyncHTTPClient
import Foundation
import Logging
@testable import MetricsEndpoint
import NIOCore
import NIOHTTP1
import NIOPosix
import PipelineCore
@testable import PipelineRuntime
import ServiceLifecycle
import Synchronization
import Testing

@Suite("Metrics for operators: the Prometheus text and the HTTP endpoint")
struct MetricsEndpointTests {
    static let logger = Logger(label: "metrics-tests") { _ in SwiftLogNoOpLogHandler() }

    /// Runs `server` in a service group while `body` uses its port, then shuts it down (also when `body` throws).
    func serving(_ server: MetricsServer, _ body: (Int) async throws -> Void) async throws {
        try await server.listen()
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                try await body(try #require(server.boundPort))
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    /// Statistics with a few of everything.
    static func statistics() -> PipelineStatistics {
        let statistics = PipelineStatistics()
        statistics.recordInput(template: "basic", platform: .fcm)
        statistics.recordInput(template: "basic", platform: .fcm, warned: true)
        statistics.recordInput(template: "carousel", platform: .apns)
        statistics.recordInput(template: nil, platform: .fcm)  // rejected: not a registered template (counted as unknown)
        statistics.recordInput(template: nil, platform: nil)  // not even JSON
        statistics.recordInput(template: nil, platform: nil)
        for _ in 0..<3 { statistics.recordOutcome(kind: .delivered, cause: nil, bytes: [], isTimerExpiry: false) }
        statistics.recordOutcome(kind: .expired, cause: .ttl, bytes: [], isTimerExpiry: false)
        statistics.recordOutcome(kind: .expired, cause: .timer, bytes: [], isTimerExpiry: true)
        statistics.recordOutcome(kind: .rejected, cause: nil, reasonCode: "missing_field", bytes: [], isTimerExpiry: false)
        statistics.recordOutcome(kind: .failed, cause: nil, reasonCode: "invalid_token", bytes: [], isTimerExpiry: false)
        statistics.recordOutcome(kind: .failed, cause: nil, reasonCode: "invalid_token", bytes: [], isTimerExpiry: false)
        statistics.recordRetry()
        statistics.recordDeletedUnread(40)
        return statistics
    }

    @Test("counters by template and platform, outcome type, expiry cause and reason code")
    func prometheusText() {
        var snapshot = Self.statistics().snapshot
        // A producer's clock ahead of this host's (-3) counts as 0.
        for seconds in [0.5, 0.25, 0.25, 8, -3, 4096] { snapshot.outcomeLatency.record(seconds: seconds) }
        let text = PrometheusText.render(snapshot)
        #expect(text == """
            # HELP campaign_pipeline_events_total Events read from the sends topic, by template and platform.
            # TYPE campaign_pipeline_events_total counter
            campaign_pipeline_events_total{template="basic",platform="fcm"} 2
            campaign_pipeline_events_total{template="carousel",platform="apns"} 1
            campaign_pipeline_events_total{template="unknown",platform="fcm"} 1
            campaign_pipeline_events_total{template="unknown",platform="unknown"} 2
            # HELP campaign_pipeline_events_with_warnings_total Events rendered with a warning and handed to their sinks all the same (the log line 'Event rendered with warnings' says which), by template and platform.
            # TYPE campaign_pipeline_events_with_warnings_total counter
            campaign_pipeline_events_with_warnings_total{template="basic",platform="fcm"} 1
            campaign_pipeline_events_with_warnings_total{template="carousel",platform="apns"} 0
            # HELP campaign_pipeline_outcomes_total Terminal outcomes written to the analytics topic and acknowledged, by type (one per event).
            # TYPE campaign_pipeline_outcomes_total counter
            campaign_pipeline_outcomes_total{type="push.delivered"} 3
            campaign_pipeline_outcomes_total{type="push.failed"} 2
            campaign_pipeline_outcomes_total{type="push.rejected"} 1
            campaign_pipeline_outcomes_total{type="push.expired"} 1
            campaign_pipeline_outcomes_total{type="push.suppressed"} 0
            # HELP campaign_pipeline_expired_total push.expired outcomes by cause (ttl: processed after expiresAt; timer: the countdown had ended).
            # TYPE campaign_pipeline_expired_total counter
            campaign_pipeline_expired_total{cause="ttl"} 1
            campaign_pipeline_expired_total{cause="timer"} 0
            # HELP campaign_pipeline_failed_total push.failed outcomes by reason code (the analytics record's reason.code).
            # TYPE campaign_pipeline_failed_total counter
            campaign_pipeline_failed_total{reason="invalid_token"} 2
            campaign_pipeline_failed_total{reason="payload_too_large"} 0
            campaign_pipeline_failed_total{reason="rejected_by_platform"} 0
            campaign_pipeline_failed_total{reason="throttled"} 0
            campaign_pipeline_failed_total{reason="unavailable"} 0
            campaign_pipeline_failed_total{reason="auth"} 0
            # HELP campaign_pipeline_rejected_total push.rejected outcomes by reason code (the analytics record's reason.code).
            # TYPE campaign_pipeline_rejected_total counter
            campaign_pipeline_rejected_total{reason="invalid_json"} 0
            campaign_pipeline_rejected_total{reason="missing_field"} 1
            campaign_pipeline_rejected_total{reason="invalid_field"} 0
            campaign_pipeline_rejected_total{reason="unknown_template"} 0
            campaign_pipeline_rejected_total{reason="payload_too_large"} 0
            campaign_pipeline_rejected_total{reason="validation_failed"} 0
            # HELP campaign_pipeline_timer_expiries_total Timer expiries emitted after delivery (push.expired, cause timer, after a push.delivered).
            # TYPE campaign_pipeline_timer_expiries_total counter
            campaign_pipeline_timer_expiries_total 1
            # HELP campaign_pipeline_outputs_retried_total Outputs the cluster did not take at first, queued to be sent again.
            # TYPE campaign_pipeline_outputs_retried_total counter
            campaign_pipeline_outputs_retried_total 1
            # HELP campaign_pipeline_records_deleted_unread_total Records of the sends topic deleted before the pipeline read them (retention): no outcome.
            # TYPE campaign_pipeline_records_deleted_unread_total counter
            campaign_pipeline_records_deleted_unread_total 40
            # HELP campaign_pipeline_outcome_latency_seconds Seconds from a send's record timestamp to its terminal outcome acknowledged by Kafka (one per event whose record has a timestamp; a send read again after a stop counts from its first writing).
            # TYPE campaign_pipeline_outcome_latency_seconds histogram
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.005"} 1
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.01"} 1
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.025"} 1
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.05"} 1
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.1"} 1
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.25"} 3
            campaign_pipeline_outcome_latency_seconds_bucket{le="0.5"} 4
            campaign_pipeline_outcome_latency_seconds_bucket{le="1.0"} 4
            campaign_pipeline_outcome_latency_seconds_bucket{le="2.5"} 4
            campaign_pipeline_outcome_latency_seconds_bucket{le="5.0"} 4
            campaign_pipeline_outcome_latency_seconds_bucket{le="10.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="30.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="60.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="120.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="300.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="600.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="900.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="1800.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="3600.0"} 5
            campaign_pipeline_outcome_latency_seconds_bucket{le="+Inf"} 6
            campaign_pipeline_outcome_latency_seconds_sum 4105.0
            campaign_pipeline_outcome_latency_seconds_count 6

            """)
    }

    @Test("with the run's state: gauges of readiness, partitions, events in flight, pending timers and backpressure")
    func gauges() {
        let status = CampaignPipeline.Status(
            phase: .consuming,
            hasJoinedGroup: true,
            assignedPartitions: 6,
            inFlightEvents: 1_250,
            pendingTimers: 3,
            pausedPartitions: 2,
            throttledSinks: 1,
            consumerLag: 4_000
        )
        let counters = PrometheusText.render(Self.statistics().snapshot)
        let text = PrometheusText.render(Self.statistics().snapshot, status: status)
        #expect(text == counters + """
            # HELP campaign_pipeline_ready 1 while the instance consumes in its group (what /readyz answers 200 for), else 0.
            # TYPE campaign_pipeline_ready gauge
            campaign_pipeline_ready 1
            # HELP campaign_pipeline_assigned_partitions Partitions of the sends topic this instance reads.
            # TYPE campaign_pipeline_assigned_partitions gauge
            campaign_pipeline_assigned_partitions 6
            # HELP campaign_pipeline_in_flight_events Events read whose outputs are not all acknowledged yet.
            # TYPE campaign_pipeline_in_flight_events gauge
            campaign_pipeline_in_flight_events 1250
            # HELP campaign_pipeline_consumer_lag Events of the sends topic's partitions this instance reads not finished yet, read or not, as measured every processing.progressLogSeconds.
            # TYPE campaign_pipeline_consumer_lag gauge
            campaign_pipeline_consumer_lag 4000
            # HELP campaign_pipeline_pending_timers Delivered timer notifications whose countdown has not ended, the whole group's (every instance keeps every partition's).
            # TYPE campaign_pipeline_pending_timers gauge
            campaign_pipeline_pending_timers 3
            # HELP campaign_pipeline_paused_partitions Partitions this instance paused: their events wait on a throttled sink, or as many as processing.maxInFlightPerPartition are in flight.
            # TYPE campaign_pipeline_paused_partitions gauge
            campaign_pipeline_paused_partitions 2
            # HELP campaign_pipeline_throttled_sinks Sinks (FCM, APNs) the platform throttles now; the partitions waiting on them are paused.
            # TYPE campaign_pipeline_throttled_sinks gauge
            campaign_pipeline_throttled_sinks 1

            """)
        var unmeasured = status
        unmeasured.consumerLag = nil
        #expect(!PrometheusText.render(Self.statistics().snapshot, status: unmeasured).contains("consumer_lag"), "not measured: no gauge")
        var joining = status
        joining.hasJoinedGroup = false
        #expect(PrometheusText.render(Self.statistics().snapshot, status: joining).contains("campaign_pipeline_ready 0\n"))
        var stopping = status
        stopping.phase = .stopping
        #expect(PrometheusText.render(Self.statistics().snapshot, status: stopping).contains("campaign_pipeline_ready 0\n"))
    }

    @Test("label values are escaped")
    func escaping() {
        #expect(PrometheusText.escaped(#"a"b\c"# + "\n") == #"a\"b\\c\n"#)
        let statistics = Self.statistics()
        statistics.recordInput(template: "ban\"ner\n", platform: nil)  // a plugin's id as odd as can be
        let text = PrometheusText.render(statistics.snapshot)
        #expect(text.contains(#"campaign_pipeline_events_total{template="ban\"ner\n",platform="unknown"} 1"#), "\(text)")
    }

    @Test("a connection that sends nothing, or not a whole request, is closed after the idle timeout")
    func idleConnectionsAreClosed() async throws {
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger, idleTimeout: .seconds(2)) { "" }
        try await serving(server) { port in
            for bytes in ["", "GET /metrics HTTP/1.1\r\nHost: x\r\n"] {
                let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connect(host: "127.0.0.1", port: port).get()
                let closedByServer = Mutex(false)
                connection.closeFuture.whenComplete { _ in closedByServer.withLock { $0 = true } }
                // In a busy test run the server may have closed the connection already, before the part of a request
                // is written: then it is closed all the same.
                if !bytes.isEmpty { try? await connection.writeAndFlush(connection.allocator.buffer(string: bytes)).get() }
                // Closed by the server well within 30 s (else closed here, after them).
                for _ in 0..<600 where !closedByServer.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(50)) }
                #expect(closedByServer.withLock { $0 }, "a connection that sent \(bytes.isEmpty ? "nothing" : "part of a request") stayed open")
                try? await connection.close()
            }
        }
    }

    @Test("a request that is not HTTP is answered 400 and its connection closed at once, not after the idle timeout")
    func malformedRequestsAreClosed() async throws {
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger, idleTimeout: .seconds(90)) { "" }
        try await serving(server) { port in
            let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            let closedByServer = Mutex(false)
            connection.closeFuture.whenComplete { _ in closedByServer.withLock { $0 = true } }
            try? await connection.writeAndFlush(connection.allocator.buffer(string: "GARBAGE\r\n\r\n")).get()
            // Before the fix it stayed open for the whole idle timeout (90 s).
            for _ in 0..<600 where !closedByServer.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(50)) }
            #expect(closedByServer.withLock { $0 }, "the connection stayed open after a malformed request")
            try? await connection.close()
        }
    }

    @Test("GET /metrics, /healthz and /readyz over HTTP while the service runs; 404 and 405 otherwise; stops on shutdown")
    func endpoint() async throws {
        let statistics = Self.statistics()
        let readiness = Mutex(CampaignPipeline.Readiness.notReady("waiting to join the consumer group"))
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger, readiness: { readiness.withLock { $0 } }) {
            PrometheusText.render(statistics.snapshot)
        }
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var port: Int?
            for _ in 0..<500 where port == nil {
                port = server.boundPort
                if port == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            let base = "http://127.0.0.1:\(try #require(port))"
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            func get(_ path: String, method: HTTPMethod = .GET) async throws -> (status: UInt, type: String?, body: String) {
                var request = HTTPClientRequest(url: base + path)
                request.method = method
                let response = try await client.execute(request, timeout: .seconds(5))
                let body = try await response.body.collect(upTo: 1 << 20)
                return (response.status.code, response.headers.first(name: "content-type"), String(buffer: body))
            }
            do {
                let metrics = try await get("/metrics")
                #expect(metrics.status == 200)
                #expect(metrics.type == "text/plain; version=0.0.4; charset=utf-8")
                #expect(metrics.body.contains(#"campaign_pipeline_outcomes_total{type="push.delivered"} 3"#))
                // Made at each request: a new outcome shows at the next scrape (over the same connection).
                statistics.recordOutcome(kind: .delivered, cause: nil, bytes: [], isTimerExpiry: false)
                #expect(try await get("/metrics?x=1").body.contains(#"campaign_pipeline_outcomes_total{type="push.delivered"} 4"#))
                #expect(try await get("/healthz").body == "ok\n")
                let notReady = try await get("/readyz")
                #expect(notReady.status == 503 && notReady.body == "not ready: waiting to join the consumer group\n")
                readiness.withLock { $0 = .ready }
                let ready = try await get("/readyz")
                #expect(ready.status == 200 && ready.body == "ready\n")
                #expect(try await get("/readyz", method: .POST).status == 405)
                // The probe (`campaign-pipeline probe`) reads the same checks.
                let portNumber = try #require(port)
                #expect(await MetricsProbe.ask(host: "127.0.0.1", port: portNumber, check: .ready, timeout: .seconds(5)) == .init(passed: true, text: "ready"))
                #expect(await MetricsProbe.ask(host: "127.0.0.1", port: portNumber, check: .live, timeout: .seconds(5)) == .init(passed: true, text: "ok"))
                readiness.withLock { $0 = .notReady("stopping") }
                #expect(await MetricsProbe.ask(host: "127.0.0.1", port: portNumber, check: .ready, timeout: .seconds(5)) == .init(passed: false, text: "not ready: stopping"))
                #expect(try await get("/nothing").status == 404)
                #expect(try await get("/metrics", method: .POST).status == 405)
                // HEAD is GET without the body (RFC 9110 §9.1; it was 405), and a 405 says what is allowed (§15.5.6).
                let head = try await get("/healthz", method: .HEAD)
                #expect(head.status == 200 && head.body.isEmpty, "\(head)")
                var post = HTTPClientRequest(url: base + "/metrics")
                post.method = .POST
                let refused = try await client.execute(post, timeout: .seconds(5))
                #expect(refused.headers.first(name: "allow") == "GET, HEAD")
            } catch {
                try? await client.shutdown()
                throw error
            }
            // A second server on the same port says which address it could not listen on.
            let second = MetricsServer(host: "127.0.0.1", port: try #require(port), logger: Self.logger) { "" }
            let error = await #expect(throws: MetricsServerError.self) { try await second.listen() }
            #expect(error?.description == "cannot serve metrics on 127.0.0.1:\(try #require(port)): the port is in use (errno 98)", "\(String(describing: error))")

            try await client.shutdown()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            // Where nothing listens, the probe fails, saying where it asked. The HTTP client tries to connect again
            // until the timeout, then reports its last refusal: a busy parallel run whose first attempt had not come
            // back within 500 ms reported only the deadline (a CI run); 3 s leaves room for attempts to end.
            let nobody = await MetricsProbe.ask(host: "127.0.0.1", port: 1, check: .ready, timeout: .seconds(3))
            #expect(!nobody.passed)
            #expect(nobody.text.hasPrefix("no answer from http://127.0.0.1:1/readyz: "), "\(nobody.text)")
            #expect(nobody.text.hasSuffix(": Connection refused (errno 111)"), "said once, without NIO's stray parenthesis: \(nobody.text)")
        }
    }

    /// Found by review: a request target in absolute form (`GET http://host/metrics`), which an HTTP/1.1 server must
    /// accept (RFC 9112 §3.2.2), was answered 404.
    @Test("request targets in origin and absolute form name the same path")
    func requestTargets() {
        #expect(MetricsHTTPHandler.path(of: "/metrics") == "/metrics")
        #expect(MetricsHTTPHandler.path(of: "/metrics?x=1") == "/metrics")
        #expect(MetricsHTTPHandler.path(of: "http://localhost:9464/metrics") == "/metrics")
        #expect(MetricsHTTPHandler.path(of: "https://[::1]:9464/readyz?verbose") == "/readyz")
        #expect(MetricsHTTPHandler.path(of: "http://localhost:9464") == "/")
        #expect(MetricsHTTPHandler.path(of: "/a://b") == "/a://b")
    }

    /// Found by review: connections were not limited, and a client holding idle ones took the file descriptors the
    /// Kafka clients then failed to get ("Too many open files"). One past the limit is closed as it comes; a
    /// connection closed makes room.
    @Test("at most maxConnections are open at once; one more is closed at once, and room comes back as they close")
    func connectionsAreLimited() async throws {
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger, maxConnections: 2) { "" }
        try await serving(server) { port in
            func connect() async throws -> (any Channel, Flag) {
                let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
                let closed = Flag()
                connection.closeFuture.whenComplete { _ in closed.set() }
                return (connection, closed)
            }
            var connections: [(channel: any Channel, closed: Flag)] = []
            for _ in 0..<3 { connections.append(try await connect()) }
            // One of the three is closed by the server: the one it counts last, which need not be the last to connect
            // (each is counted on its own event loop; on a busy machine the second was counted after the third).
            for _ in 0..<500 where !connections.contains(where: { $0.closed.isSet }) { try await Task.sleep(for: .milliseconds(10)) }
            // A moment more, in case the server were to close a second one.
            try await Task.sleep(for: .milliseconds(200))
            #expect(connections.filter { $0.closed.isSet }.count == 1, "one connection past the limit is closed, the other two stay open")
            let open = connections.filter { !$0.closed.isSet }.map(\.channel)
            try await #require(open.first).close()
            // Room again: a new connection is answered.
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            var answered = false
            for _ in 0..<50 where !answered {
                let response = try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(2))
                answered = response?.status == .ok
                if !answered { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(answered, "a connection is served once another closed")
            try await client.shutdown()
            for connection in connections { try? await connection.channel.close() }
        }
    }

    /// Pipelined requests are answered in order, once each, with the back-pressure handler in the connection's
    /// pipeline (it stops reading while answers wait for a client that does not read them, which made the server's
    /// memory grow without bound, found by review): a check that it keeps pipelining working; the bound is
    /// ``unreadAnswersStopTheReading()``'s.
    @Test("a thousand pipelined requests, read only once all are sent, are each answered in order")
    func pipelinedRequests() async throws {
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger) { String(repeating: "m", count: 2_000) }
        try await serving(server) { port in
            let received = ReceivedBytes()
            let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received)) }
                }
                .connect(host: "127.0.0.1", port: port).get()
            let requests = (0..<1_000).map { index in index.isMultiple(of: 2) ? "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" : "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" }
            try await connection.writeAndFlush(connection.allocator.buffer(string: requests.joined())).get()
            // Until every answer came (up to 20 s): waiting for about their bytes and a little more missed the last
            // ones on a busy machine. Counted with a scan of the bytes, and only when more came: splitting the whole
            // text (`components(separatedBy:)`, in a debug build) every 20 ms held a thread of the cooperative pool
            // for over a minute of a parallel run, and the other tests' timeouts failed.
            let statusLine = Array("HTTP/1.1 200 OK".utf8)
            var counted = (bytes: -1, statuses: 0)
            for _ in 0..<1_000 {
                let bytes = received.all
                if bytes.count != counted.bytes { counted = (bytes.count, Self.occurrences(of: statusLine, in: bytes)) }
                if counted.statuses >= 1_000 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            // Anything past the thousandth would show.
            try await Task.sleep(for: .milliseconds(200))
            let bytes = received.all
            let statuses = Self.occurrences(of: statusLine, in: bytes)
            #expect(statuses == 1_000, "answered \(statuses) of 1,000")
            // The first four answers (about 4.5 KB) for the order.
            let text = String(decoding: bytes.prefix(16_384), as: UTF8.self)
            let bodies = text.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.hasPrefix("m") ? "m" : $0.hasPrefix("ok") ? "ok" : "?" }
            #expect(Array(bodies.prefix(4)) == ["m", "ok", "m", "ok"], "in order")
            try await connection.close()
        }
    }

    /// How many times `pattern` occurs in `bytes`, not overlapping.
    static func occurrences(of pattern: [UInt8], in bytes: [UInt8]) -> Int {
        guard let first = pattern.first, bytes.count >= pattern.count else { return 0 }
        var count = 0
        var index = 0
        while index <= bytes.count - pattern.count {
            if bytes[index] == first, bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
                count += 1
                index += pattern.count
            } else {
                index += 1
            }
        }
        return count
    }

    /// The bound itself: a client that sends requests and never reads the answers. The server stops reading its
    /// requests once its answers wait (the kernel's buffers are full), instead of answering every request into
    /// memory. Without the back-pressure handler it keeps reading and answering (in a debug build about 14,000
    /// answers of 2 KB a second, all held).
    @Test("a client that does not read its answers is not read from: its requests stop being taken")
    func unreadAnswersStopTheReading() async throws {
        let answered = Atomic<Int>(0)
        let server = MetricsServer(host: "127.0.0.1", port: 0, logger: Self.logger) {
            answered.wrappingAdd(1, ordering: .relaxed)
            return String(repeating: "m", count: 2_000)
        }
        try await serving(server) { port in
            // The client reads nothing, and its own buffers are small, so that what is taken is what the server read.
            let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.autoRead, value: false)
                .channelOption(.socketOption(.so_sndbuf), value: 65_536)
                .channelOption(.socketOption(.so_rcvbuf), value: 65_536)
                .connect(host: "127.0.0.1", port: port).get()
            let chunk = String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: 1_900)  // ~64 KiB
            let chunks = 512
            let taken = Atomic<Int>(0)
            for _ in 0..<chunks {
                connection.writeAndFlush(connection.allocator.buffer(string: chunk)).whenSuccess {
                    taken.wrappingAdd(1, ordering: .relaxed)
                }
            }
            // The answers stop once the kernel's buffers are full and the requests read by then are answered (a
            // second without a new one, after the first, within 20 s: on a busy machine the first can take a while);
            // then they stay stopped.
            let start = ContinuousClock.now
            var last = (count: -1, since: start)
            while ContinuousClock.now - start < .seconds(20) {
                let count = answered.load(ordering: .relaxed)
                if count != last.count {
                    last = (count, ContinuousClock.now)
                } else if count > 0, ContinuousClock.now - last.since >= .seconds(1) {
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let stopped = answered.load(ordering: .relaxed)
            try await Task.sleep(for: .seconds(1))
            let later = answered.load(ordering: .relaxed)
            #expect(stopped > 0 && later == stopped, "the server kept answering: \(stopped) answers, then \(later) a second later")
            #expect(taken.load(ordering: .relaxed) < chunks, "every request was taken: the server read them all")
            try await connection.close()
        }
    }

    /// `campaign-pipeline probe --host ::1` failed with an invalid URL: an IPv6 address goes in brackets.
    @Test("the probe asks an IPv6 address")
    func probeOverIPv6() async throws {
        let server = MetricsServer(host: "::1", port: 0, logger: Self.logger) { "" }
        do {
            try await server.listen()
        } catch {
            // No IPv6 loopback on this machine: nothing to ask.
            return
        }
        let group = ServiceGroup(services: [server], logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try #require(server.boundPort)
            #expect(await MetricsProbe.ask(host: "::1", port: port, check: .live, timeout: .seconds(5)) == .init(passed: true, text: "ok"))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// Every byte a connection received.
private final class ReceivedBytes: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    func append(_ buffer: ByteBuffer) {
        bytes.withLock { $0 += buffer.readableBytesView }
    }

    var all: [UInt8] { bytes.withLock { $0 } }
    var count: Int { bytes.withLock { $0.count } }
}

/// Collects what a connection receives into ``ReceivedBytes``.
private final class Collector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let received: ReceivedBytes

    init(_ received: ReceivedBytes) {
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(unwrapInboundIn(data))
    }
}

/// A flag set once, from any thread.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() {
        value.store(true, ordering: .relaxed)
    }

    var isSet: Bool { value.load(ordering: .relaxed) }
}
