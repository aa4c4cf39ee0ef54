import Foundation
import PipelineCore
@testable import PlatformSinks
import PushSinks
import SinkTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("APNs sink against a local HTTP/2 APNs", .timeLimit(.minutes(2)))
struct APNsSinkTests {
    @Test("sends the rendered payload and headers over HTTP/2 with a verified ES256 provider token, many streams on one connection")
    func delivers() async throws {
        let apns = try await FakeAPNs.start(responseDelay: .milliseconds(20))
        defer { Task { await apns.shutdown() } }
        let sink = try APNsSender.makeSink(apns.configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        let names = ["basic-apns", "carousel-apns", "timer-apns", "timer-apns-full"]
        let notifications = try (0..<100).map { try sample(names[$0 % names.count], $0, token: String(format: "%064x", $0 + 1)) }
        try await whileRunning(sink) {
            for notification in notifications {
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            try await outcomes.wait(for: 100)
        }
        #expect(notifications.allSatisfy { outcomes[$0.eventId] == .delivered(attempts: 1) })

        let requests = apns.server.requests
        #expect(requests.count == 100)
        #expect(Set(requests.map(\.connectionID)).count == 1, "one connection")
        #expect(apns.server.peakConcurrentRequests > 1, "concurrent streams")
        let byPath = Dictionary(grouping: requests, by: \.path)
        for notification in notifications {
            let request = try #require(byPath["/3/device/\(notification.token)"]?.first)
            #expect(request.httpVersion == "HTTP/2")
            #expect(request.body == notification.payloadBytes)
            #expect(request.header("apns-topic") == apns.topic)
            #expect(request.header("apns-id") == notification.messageId)
            for header in notification.headers {
                #expect(request.header(header.name) == header.value, "\(header.name)")
            }
            #expect(request.header("apns-push-type") == "alert")
        }
        // One provider token, reused for every request, signed by the team's key.
        let bearers = Set(requests.compactMap { $0.header("authorization") })
        #expect(bearers.count == 1)
        let bearer = try #require(bearers.first)
        #expect(bearer.hasPrefix("bearer "))
        let jwt = try JWTVerification.verifyES256(String(bearer.dropFirst("bearer ".count)), publicKey: apns.publicKey)
        #expect(jwt.headerString("alg") == "ES256")
        #expect(jwt.headerString("kid") == apns.keyID)
        #expect(jwt.claimString("iss") == apns.teamID)
        let issuedAt = try #require(jwt.claimInteger("iat"))
        #expect(abs(issuedAt - Int(Date().timeIntervalSince1970)) < 60)
    }

    /// APNs ends connections with a GOAWAY frame (maintenance, a certificate change). The streams it announces as
    /// processed are answered on the old connection; the ones above its last stream id were never processed and
    /// must be sent again, on a new connection, and so must everything submitted after it: each notification ends
    /// delivered once, none is lost or counted failed.
    @Test("a GOAWAY mid-flight: announced streams are answered, the unprocessed ones and later sends go on a new connection")
    func goAwayMidFlight() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        let policy = RetryPolicy(initialBackoff: .milliseconds(100), maxBackoff: .milliseconds(400), deadline: .seconds(60))
        let sink = try APNsSender.makeSink(apns.configuration, environment: [:], retry: policy, logger: sinkLogger)
        let outcomes = Outcomes()
        let notifications = try (0..<40).map { try sample("basic-apns", $0, token: String(format: "%064x", $0 + 1)) }
        let before = notifications.prefix(20)
        let after = notifications.suffix(20)
        apns.gate.close()
        let announced = try await whileRunning(sink) {
            for notification in before {
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            let start = ContinuousClock.now
            while apns.server.requests.count < before.count {
                guard ContinuousClock.now - start < .seconds(30) else { throw HarnessError("only \(apns.server.requests.count) of 20 requests arrived") }
                try await Task.sleep(for: .milliseconds(5))
            }
            let announced = try await apns.server.goAway(leavingUnprocessed: 5)
            apns.gate.open()
            for notification in after {
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            try await outcomes.wait(for: notifications.count)
            return announced
        }

        #expect(announced.count == 1, "one connection was open: \(announced)")
        let lastStream = try #require(announced[1])
        let requests = apns.server.requests
        let unprocessed = Set(requests.filter { $0.connectionID == 1 && ($0.streamID ?? 0) > lastStream }.map(\.path))
        #expect(unprocessed.count == 5, "the GOAWAY left the last five streams out: \(requests.map { ($0.connectionID, $0.streamID ?? -1) })")
        #expect(apns.server.connectionsAccepted == 2, "a new connection after the GOAWAY")
        for notification in notifications {
            let path = "/3/device/\(notification.token)"
            // Answered once: on the first connection within the announced streams, or on the new connection.
            let answered = requests.filter { $0.path == path && ($0.connectionID != 1 || ($0.streamID ?? 0) <= lastStream) }
            #expect(answered.count == 1, "\(notification.eventId) answered \(answered.count) times")
        }
        for notification in before {
            let expected: SinkOutcome = .delivered(attempts: unprocessed.contains("/3/device/\(notification.token)") ? 2 : 1)
            #expect(outcomes[notification.eventId] == expected, "\(notification.eventId)")
        }
        for notification in after {
            // Sent while the GOAWAY may still be on its way to the client: a stream opened on the old connection
            // after it is refused unprocessed (the server never sees it), and the attempt is made again.
            let outcome = outcomes[notification.eventId]
            #expect(outcome == .delivered(attempts: 1) || outcome == .delivered(attempts: 2), "\(notification.eventId): \(String(describing: outcome))")
            #expect(requests.filter { $0.path == "/3/device/\(notification.token)" }.allSatisfy { $0.connectionID == 2 }, "sent after the GOAWAY: on the new connection")
        }
    }

    @Test("headers from delivery options: priority, expiration and collapse id")
    func optionHeaders() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        let sink = try APNsSender.makeSink(apns.configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        let event = try Fixtures.sample("basic-apns")
            .setting(["options"], to: .object(["collapseKey": "sale", "priority": "normal", "ttlSeconds": .int(600)]))
            .setting(["recipient", "token"], to: "abcdef0123")
        guard case .rendered(let notification) = sinkRegistry.render(event: event) else {
            Issue.record("the sample must render")
            return
        }
        let outcomes = Outcomes()
        try await whileRunning(sink) {
            await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            try await outcomes.wait(for: 1)
        }
        let request = try #require(apns.server.requests.first)
        #expect(request.header("apns-priority") == "5")
        #expect(request.header("apns-collapse-id") == "sale")
        #expect(request.header("apns-expiration").flatMap(Int64.init) != nil)
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var name: String
        var answers: [StubResponse]
        var code: SinkFailure.Code?
        var abandoned = false
        var attempts: Int
        var sleeps: [Duration] = []
        var invalidatedAt: Timestamp? = nil
        var testDescription: String { name }
    }

    static func reason(_ status: Int, _ reason: String, timestamp: Int? = nil, headers: [(name: String, value: String)] = []) -> StubResponse {
        let extra = timestamp.map { #","timestamp":\#($0)"# } ?? ""
        return .json(status, #"{"reason":"\#(reason)"\#(extra)}"#, headers: headers)
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(name: "400 BadDeviceToken → invalid_token", answers: [reason(400, "BadDeviceToken")], code: .invalidToken, attempts: 1),
        ErrorCase(name: "400 DeviceTokenNotForTopic → invalid_token", answers: [reason(400, "DeviceTokenNotForTopic")], code: .invalidToken, attempts: 1),
        ErrorCase(
            name: "410 Unregistered with timestamp → invalid_token, since then",
            answers: [reason(410, "Unregistered", timestamp: 1_763_800_000_123)], code: .invalidToken, attempts: 1,
            invalidatedAt: Timestamp(secondsSince1970: 1_763_800_000, nanoseconds: 123_000_000)
        ),
        ErrorCase(name: "413 PayloadTooLarge → payload_too_large", answers: [reason(413, "PayloadTooLarge")], code: .payloadTooLarge, attempts: 1),
        ErrorCase(name: "400 BadCollapseId → rejected_by_platform", answers: [reason(400, "BadCollapseId")], code: .rejectedByPlatform, attempts: 1),
        ErrorCase(
            name: "429 TooManyRequests with Retry-After 3 → retried after 3 s",
            answers: [reason(429, "TooManyRequests", headers: [("retry-after", "3")])], code: nil, attempts: 2, sleeps: [.seconds(3)]
        ),
        ErrorCase(
            name: "503 ServiceUnavailable then 500 → retried with backoff",
            answers: [reason(503, "ServiceUnavailable"), reason(500, "InternalServerError")], code: nil, attempts: 3, sleeps: [.milliseconds(500), .seconds(1)]
        ),
        ErrorCase(
            name: "400 IdleTimeout → retried (on a new connection)",
            answers: [reason(400, "IdleTimeout")], code: nil, attempts: 2, sleeps: [.milliseconds(500)]
        ),
        ErrorCase(name: "403 InvalidProviderToken → the sink stops", answers: [reason(403, "InvalidProviderToken")], code: .auth, abandoned: true, attempts: 1),
        ErrorCase(
            name: "403 ExpiredProviderToken on a token younger than 20 minutes → the sink stops (a clock problem)",
            answers: [reason(403, "ExpiredProviderToken")], code: .auth, abandoned: true, attempts: 1
        ),
    ]

    @Test("error answers map to the outcome taxonomy with the right retries and waits", arguments: errorCases)
    func errorTaxonomy(_ errorCase: ErrorCase) async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        apns.answers.script("0badc0de", errorCase.answers)
        let clock = VirtualClock()
        let policy = RetryPolicy(initialBackoff: .milliseconds(500), maxBackoff: .seconds(4), jitter: 0, deadline: .seconds(30))
        let sink = RetryingSink(sender: try APNsSender(apns.configuration, environment: [:]), concurrency: 4, policy: policy, clock: clock.retryClock, logger: sinkLogger)
        let outcomes = Outcomes()
        let notification = try sample("basic-apns", 1, token: "0badc0de")
        try await whileRunning(sink) {
            await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            try await outcomes.wait(for: 1)
        }
        let outcome = try #require(outcomes[notification.eventId])
        switch outcome {
        case .delivered(let attempts):
            #expect(errorCase.code == nil, "expected \(String(describing: errorCase.code))")
            #expect(attempts == errorCase.attempts)
        case .failed(let failure):
            #expect(!errorCase.abandoned)
            #expect(failure.code == errorCase.code)
            #expect(failure.attempts == errorCase.attempts)
            #expect(failure.tokenInvalidatedAt == errorCase.invalidatedAt)
            #expect(failure.detail.hasPrefix("APNs "), "\(failure.detail)")
        case .abandoned(let failure):
            #expect(errorCase.abandoned)
            #expect(failure.code == errorCase.code)
            #expect(sink.state == .stopped(failure))
        case .expired(let detail):
            Issue.record("no expiresAt, yet expired: \(detail)")
        }
        #expect(clock.sleeps == errorCase.sleeps)
        #expect(apns.server.requests.count == errorCase.attempts)
    }

    /// APNs answers 429 for two reasons: `TooManyRequests` is about one device token, and only that recipient waits;
    /// `TooManyProviderTokenUpdates` is about the provider token every request of the sink carries, so the whole sink
    /// waits: it counts as throttled, the pipeline pauses the partitions feeding it, and without a `Retry-After` the
    /// sink waits its throttled backoff (here 5 s), not the first backoff.
    @Test("429 TooManyProviderTokenUpdates throttles the sink; 429 TooManyRequests holds back only its recipient", arguments: [
        ("TooManyProviderTokenUpdates", SinkState.throttled, [Duration.seconds(5)]),
        ("TooManyRequests", SinkState.ready, [Duration.milliseconds(500)]),
    ])
    func throttlingScope(reason: String, stateWhileWaiting expected: SinkState, sleeps: [Duration]) async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        apns.answers.script("0badc0de", [Self.reason(429, reason)])
        let clock = VirtualClock()
        // The sink's state is read while the notification waits for its retry.
        let sinkBox = Mutex<RetryingSink<APNsSender>?>(nil)
        let stateWhileWaiting = Mutex<SinkState?>(nil)
        let recordingClock = clock.retryClock { stateWhileWaiting.withLock { $0 = sinkBox.withLock { $0 }?.state } }
        let policy = RetryPolicy(initialBackoff: .milliseconds(500), jitter: 0, deadline: .seconds(30), throttledBackoff: .seconds(5))
        let sink = RetryingSink(sender: try APNsSender(apns.configuration, environment: [:]), concurrency: 4, policy: policy, clock: recordingClock, logger: sinkLogger)
        sinkBox.withLock { $0 = sink }
        let outcomes = Outcomes()
        let notification = try sample("basic-apns", 1, token: "0badc0de")
        try await whileRunning(sink) {
            await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            try await outcomes.wait(for: 1)
        }
        #expect(outcomes[notification.eventId] == .delivered(attempts: 2))
        #expect(clock.sleeps == sleeps)
        #expect(stateWhileWaiting.withLock { $0 } == expected)
    }

    @Test("the provider token is reused until the refresh interval, then replaced; APNs' expiry replaces it only after 20 minutes")
    func providerTokenLifetime() throws {
        let key = TestCredentials.makeAPNsKey()
        let time = ManualCredentialClock(wall: Timestamp(secondsSince1970: 1_800_000_000))
        let tokens = try APNsProviderToken(p8: key.p8, keyID: "K", teamID: "T", refreshMinutes: 40, configurationKey: "apns.privateKey", clock: time.clock)
        let first = try tokens.token()
        time.advance(seconds: 39 * 60)
        #expect(try tokens.token() == first, "reused within 40 minutes")
        time.advance(seconds: 60)
        let second = try tokens.token()
        #expect(second != first, "replaced after 40 minutes")
        #expect(!tokens.expire(second), "not replaced again within 20 minutes, even when APNs says it expired")
        time.advance(seconds: 20 * 60)
        #expect(tokens.expire(second))
        #expect(try tokens.token() != second)
        // Intervals outside 20–50 minutes are clamped.
        #expect(try APNsProviderToken(p8: key.p8, keyID: "K", teamID: "T", refreshMinutes: 5, configurationKey: "k").refreshInterval == 20 * 60)
        #expect(try APNsProviderToken(p8: key.p8, keyID: "K", teamID: "T", refreshMinutes: 90, configurationKey: "k").refreshInterval == 50 * 60)
    }

    /// A provider token states when it was made (`iat`, wall-clock time); its age is the longer of the wall clock's and
    /// the monotonic clock's measures. On the wall clock alone, a clock set back kept a token APNs refuses as expired
    /// (and refused to replace it when APNs said so, which stops the sink); on the monotonic clock alone, a machine
    /// paused by its host (the wall clock set forward on resume, the monotonic clock still) did the same.
    @Test("neither a clock set back nor a paused machine keeps a provider token past its interval; its iat is the wall clock's")
    func providerTokenAgeIgnoresClockSteps() throws {
        let key = TestCredentials.makeAPNsKey()
        let time = ManualCredentialClock(wall: Timestamp(secondsSince1970: 1_800_000_000))
        let tokens = try APNsProviderToken(p8: key.p8, keyID: "K", teamID: "T", refreshMinutes: 40, configurationKey: "apns.privateKey", clock: time.clock)
        let first = try tokens.token()
        #expect(try JWTVerification.verifyES256(first, publicKey: key.publicKey).claimInteger("iat") == 1_800_000_000)
        time.stepWall(seconds: -2 * 3_600)
        time.advance(seconds: 39 * 60)
        #expect(try tokens.token() == first, "39 minutes old")
        time.advance(seconds: 60)
        let second = try tokens.token()
        #expect(second != first, "40 minutes old, though the wall clock went back")
        #expect(
            try JWTVerification.verifyES256(second, publicKey: key.publicKey).claimInteger("iat") == 1_800_000_000 - 2 * 3_600 + 40 * 60,
            "iat is the wall clock's time"
        )
        // Paused for three hours: on resume the wall clock is set forward; the monotonic clock did not count the pause.
        time.stepWall(seconds: 3 * 3_600)
        let third = try tokens.token()
        #expect(third != second, "three hours old by the wall clock")
        time.stepWall(seconds: -3_600)
        time.advance(seconds: 21 * 60)
        #expect(tokens.expire(third), "APNs' expiry replaces a token 21 minutes old, though the wall clock went back")
        let fourth = try tokens.token()
        #expect(fourth != third)
        time.stepWall(seconds: 2 * 3_600)
        #expect(tokens.expire(fourth), "APNs' expiry replaces a token two hours old by the wall clock after a pause")
    }

    @Test("a token that cannot go into a URL path is invalid without a request")
    func unsafeToken() async throws {
        #expect(APNsSender.isPathSafe("0a1b2c"))
        #expect(!APNsSender.isPathSafe("../../x"))
        #expect(!APNsSender.isPathSafe("a b"))
        #expect(!APNsSender.isPathSafe(""))
    }

    /// Found by review: fifty tokens the sender refused without sending them (FCM tokens routed to APNs) stopped the
    /// sink as a wrong environment or topic, which they say nothing about.
    @Test("tokens refused without a request are invalid, and any number of them leaves the sink running")
    func unsentTokensDoNotStopTheSink() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        let sink = try APNsSender.makeSink(apns.configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        let notifications = try (0..<60).map { try sample("basic-apns", $0, token: "dXk3Zq\($0):APA91bHun4MxP5egoKMwt2KZFBaFUH") }
        try await whileRunning(sink) {
            for notification in notifications {
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            try await outcomes.wait(for: 60)
        }
        #expect(apns.server.requests.isEmpty, "none was sent")
        #expect(sink.state == .ready, "\(sink.state)")
        for notification in notifications {
            guard case .failed(let failure) = outcomes[notification.eventId] else {
                Issue.record("\(notification.eventId): \(String(describing: outcomes[notification.eventId]))")
                continue
            }
            #expect(failure.code == .invalidToken)
            #expect(failure.wasNotSent)
        }
    }

    @Test("configuration errors name the setting")
    func configurationErrors() {
        #expect(throws: SinkConfigurationError(key: "apns.keyId", reason: "required")) {
            try APNsSender(APNsSinkConfiguration(teamID: "T", privateKey: .value("x"), topic: "t"), environment: [:])
        }
        #expect(throws: SinkConfigurationError(key: "apns.privateKey (value (hidden))", reason: "not an APNs auth key (.p8, a P-256 private key in PEM)")) {
            try APNsSender(APNsSinkConfiguration(keyID: "K", teamID: "T", privateKey: .value("not a key"), topic: "t"), environment: [:])
        }
    }

    /// A CA file that is readable but holds no PEM certificate (a DER file, a key) used to be taken at start-up and
    /// to fail every TLS handshake afterwards: every message retried as `unavailable` until the deadline, then failed.
    @Test("a CA certificate file without a PEM certificate is refused at start-up, naming the setting")
    func unusableCertificateFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ca.pem").path
        try "not a certificate\n".write(toFile: file, atomically: true, encoding: .utf8)
        var configuration = APNsSinkConfiguration(keyID: "K", teamID: "T", privateKey: .value(TestCredentials.makeAPNsKey().p8), topic: "t")
        configuration.connection.caCertificateFile = file
        do {
            let sender = try APNsSender(configuration, environment: [:])
            await sender.shutdown()
            Issue.record("a CA file without a certificate must be refused")
        } catch {
            #expect(error.key == "apns.caCertificateFile")
            #expect(error.reason.contains(file), "\(error)")
        }
        // One that is not there says so.
        configuration.connection.caCertificateFile = directory.appendingPathComponent("missing.pem").path
        #expect(throws: SinkConfigurationError(key: "apns.caCertificateFile", reason: "cannot read the file '\(directory.path)/missing.pem': no such file")) {
            try APNsSender(configuration, environment: [:])
        }
    }

    /// A request that got no answer names the server, not the device token in its path: the detail goes to logs and
    /// to analytics records.
    @Test("no answer: the detail names the server without the device token")
    func noAnswerKeepsTheTokenOut() async throws {
        let apns = try await FakeAPNs.start()
        defer { Task { await apns.shutdown() } }
        try await apns.server.stop()
        // Refused connections are tried again until the request's deadline.
        var configuration = apns.configuration
        configuration.connection.requestTimeout = .seconds(3)
        let sender = try APNsSender(configuration, environment: [:])
        let token = String(repeating: "ab12", count: 16)
        let failure = try #require(await sender.attempt(try sample("basic-apns", 1, token: token)))
        await sender.shutdown()
        #expect(failure.code == .unavailable)
        #expect(failure.detail.hasPrefix("no answer from \(apns.server.baseURL)/3/device/…: "), "\(failure.detail)")
        #expect(!failure.detail.contains(token), "\(failure.detail)")
    }
}
