import Foundation
import NIOHTTP1
import PipelineCore
@testable import PlatformSinks
import PushSinks
import SinkTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("FCM HTTP v1 sink against a local FCM", .timeLimit(.minutes(2)))
struct FCMSinkTests {
    @Test("sends exactly the rendered body with a bearer token exchanged for a verified RS256 assertion, token reused")
    func deliversWithOAuth() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let sink = try FCMSender.makeSink(fcm.configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        #expect(sink.name == "fcm:test-project")
        let outcomes = Outcomes()
        let notifications = try (0..<20).map { try sample(["basic-fcm", "carousel-fcm", "timer-fcm"][$0 % 3], $0, token: "fcm-token-\($0)") }
        try await whileRunning(sink) {
            for notification in notifications {
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            try await outcomes.wait(for: 20)
        }
        for notification in notifications {
            #expect(outcomes[notification.eventId] == .delivered(attempts: 1))
        }
        // One token exchange for all twenty messages.
        #expect(fcm.tokenRequests.count == 1)
        let exchange = try #require(fcm.tokenRequests.first)
        let form = formFields(exchange.body)
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let assertion = try JWTVerification.verifyRS256(try #require(form["assertion"]), publicKey: fcm.publicKey)
        #expect(assertion.headerString("kid") == fcm.privateKeyID)
        #expect(assertion.claimString("iss") == fcm.clientEmail)
        #expect(assertion.claimString("scope") == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(assertion.claimString("aud") == "\(fcm.server.baseURL)/token")
        let issuedAt = try #require(assertion.claimInteger("iat"))
        #expect(abs(issuedAt - Int(Date().timeIntervalSince1970)) < 60)
        #expect(assertion.claimInteger("exp") == issuedAt + 3600)
        // Issued ten seconds early, for hosts whose clock is a little fast (Google refuses an assertion from its future).
        let key = try ServiceAccountKey(json: fcm.serviceAccountJSON, key: "fcm.serviceAccount")
        let backdated = try JWTVerification.verifyRS256(
            try key.assertion(scope: "s", now: Timestamp(secondsSince1970: 1_800_000_000)),
            publicKey: fcm.publicKey
        )
        #expect(backdated.claimInteger("iat") == 1_799_999_990)
        #expect(backdated.claimInteger("exp") == 1_800_003_590)

        // Every send: the exact rendered body, the bearer token, JSON.
        let sends = fcm.sendRequests
        #expect(sends.count == 20)
        let bodies = Set(sends.map(\.body))
        #expect(bodies == Set(notifications.map(\.payloadBytes)))
        for request in sends {
            #expect(request.method == "POST")
            #expect(request.path == "/v1/projects/test-project/messages:send")
            #expect(request.header("authorization") == "Bearer access-token-1")
            #expect(request.header("content-type")?.hasPrefix("application/json") == true)
            #expect(request.httpVersion == "HTTP/2")
        }
    }

    @Test("the access token is refreshed before it expires, alongside sends that keep using the valid one, and replaced once expired")
    func refreshesToken() async throws {
        let fcm = try await FakeFCM.start(wireProtocol: .http1)
        defer { Task { await fcm.shutdown() } }
        fcm.setTokenLifetime(seconds: 3_600)  // due for a refresh after 55 minutes
        let time = ManualCredentialClock()
        let sender = try FCMSender(fcm.configuration, environment: [:], clock: time.clock)
        let sink = RetryingSink(sender: sender, concurrency: 4, policy: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        func send(_ index: Int) async throws {
            let notification = try sample("basic-fcm", index, token: "t\(index)")
            await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            try await outcomes.wait(for: index)
        }
        try await whileRunning(sink) {
            try await send(1)
            time.advance(seconds: 56 * 60)
            // Due for a refresh: sent with the still-valid token while the new one is fetched.
            try await send(2)
            // Once the refresh is done, sends use the new token.
            var index = 3
            while fcm.sendRequests.last?.header("authorization") != "Bearer access-token-2", index < 200 {
                try await Task.sleep(for: .milliseconds(50))
                try await send(index)
                index += 1
            }
        }
        let bearers = fcm.sendRequests.map { $0.header("authorization") }
        #expect(fcm.tokenRequests.count == 2, "one refresh, however many sends waited for it")
        #expect(bearers.prefix(2) == ["Bearer access-token-1", "Bearer access-token-1"], "the valid token is used while refreshing")
        #expect(bearers.last == "Bearer access-token-2")
        #expect(fcm.sendRequests.first?.httpVersion == "HTTP/1.1")
    }

    /// A 401 to an access token is either a token refused before its time (revoked, clocks apart: a new one is fetched
    /// and the message retried) or, to a token just fetched, the account itself refused (the sink stops).
    @Test("a 401 to an access token older than a minute refreshes it and retries; to a fresh one it stops the sink")
    func unauthenticatedAnswers() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let unauthenticated = #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#
        fcm.answers.script("fresh", [.json(401, unauthenticated)])
        fcm.answers.script("later", [.json(401, unauthenticated)])
        let time = ManualCredentialClock()
        let sender = try FCMSender(fcm.configuration, environment: [:], clock: time.clock)

        let refused = await sender.attempt(try sample("basic-fcm", 1, token: "fresh"))
        #expect(refused?.code == .auth, "a token fetched for this very send is refused: the account is")
        #expect(await sender.attempt(try sample("basic-fcm", 2, token: "ok")) == nil)
        #expect(fcm.tokenRequests.count == 2, "the refused token was dropped")

        time.advance(seconds: 120)
        let retried = await sender.attempt(try sample("basic-fcm", 3, token: "later"))
        #expect(retried?.code == .unavailable, "\(String(describing: retried))")
        #expect(retried?.detail.hasSuffix("the access token is refreshed and the message retried") == true)
        #expect(await sender.attempt(try sample("basic-fcm", 3, token: "later")) == nil, "the retry goes through")
        #expect(fcm.tokenRequests.count == 3)
        #expect(fcm.sendRequests.last?.header("authorization") == "Bearer access-token-3")
        await sender.shutdown()
    }

    @Test("an expired access token is not used: the send waits for a new one")
    func expiredToken() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let time = ManualCredentialClock()
        let sender = try FCMSender(fcm.configuration, environment: [:], clock: time.clock)
        let sink = RetryingSink(sender: sender, concurrency: 4, policy: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        try await whileRunning(sink) {
            let first = try sample("basic-fcm", 1, token: "a")
            await sink.submit(first, completion: outcomes.completion(for: first.eventId))
            try await outcomes.wait(for: 1)
            time.advance(seconds: 3_601)
            let second = try sample("basic-fcm", 2, token: "b")
            await sink.submit(second, completion: outcomes.completion(for: second.eventId))
            try await outcomes.wait(for: 2)
        }
        #expect(fcm.sendRequests.map { $0.header("authorization") } == ["Bearer access-token-1", "Bearer access-token-2"])
    }

    /// An access token's age is the longer of the wall clock's and the monotonic clock's measures. On the wall clock
    /// alone, a clock set back kept an expired token in use (each send refused with 401) and took a 401 to an old token
    /// for a refused account, which stops the sink; on the monotonic clock alone, a machine paused by its host (the
    /// wall clock set forward on resume, the monotonic clock still) kept an expired token.
    @Test("neither a clock set back nor a paused machine keeps an expired access token or makes an old one look fresh to a 401")
    func tokenTimesIgnoreClockSteps() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let unauthenticated = #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#
        fcm.answers.script("later", [.json(401, unauthenticated)])
        let time = ManualCredentialClock()
        let sender = try FCMSender(fcm.configuration, environment: [:], clock: time.clock)
        #expect(await sender.attempt(try sample("basic-fcm", 1, token: "a")) == nil)
        time.stepWall(seconds: -2 * 3_600)
        time.advance(seconds: 3_601)
        #expect(await sender.attempt(try sample("basic-fcm", 2, token: "b")) == nil)
        #expect(
            fcm.sendRequests.map { $0.header("authorization") } == ["Bearer access-token-1", "Bearer access-token-2"],
            "the expired token is replaced, though the wall clock went back"
        )
        time.stepWall(seconds: -3_600)
        time.advance(seconds: 120)
        let retried = await sender.attempt(try sample("basic-fcm", 3, token: "later"))
        #expect(retried?.code == .unavailable, "a 401 to a token two minutes old is retried with a new one: \(String(describing: retried))")
        #expect(await sender.attempt(try sample("basic-fcm", 3, token: "later")) == nil)
        #expect(fcm.sendRequests.last?.header("authorization") == "Bearer access-token-3")
        // Paused for an hour: on resume the wall clock is set forward; the monotonic clock did not count the pause.
        time.stepWall(seconds: 3_601)
        #expect(await sender.attempt(try sample("basic-fcm", 4, token: "c")) == nil)
        #expect(fcm.sendRequests.last?.header("authorization") == "Bearer access-token-4", "expired by the wall clock")
        await sender.shutdown()
    }

    /// One scripted error answer and what must come of it.
    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var name: String
        var answers: [StubResponse]
        var outcome: Expected
        var sleeps: [Duration] = []
        var requests: Int

        enum Expected: Sendable, Equatable {
            case delivered(attempts: Int)
            case failed(SinkFailure.Code, attempts: Int)
            case abandoned(SinkFailure.Code)
        }

        var testDescription: String { name }
    }

    static func fcmError(_ status: Int, _ code: String, _ message: String, fieldViolation: String? = nil, headers: [(name: String, value: String)] = []) -> StubResponse {
        var details = #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}"#
        if let fieldViolation {
            details += #",{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(fieldViolation)","description":"Invalid registration token"}]}"#
        }
        let status_ = code == "UNREGISTERED" ? "NOT_FOUND" : code == "QUOTA_EXCEEDED" ? "RESOURCE_EXHAUSTED" : code
        return .json(status, #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(status_)","details":[\#(details)]}}"#, headers: headers)
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(name: "404 UNREGISTERED → invalid_token", answers: [fcmError(404, "UNREGISTERED", "Requested entity was not found.")], outcome: .failed(.invalidToken, attempts: 1), requests: 1),
        ErrorCase(
            name: "400 INVALID_ARGUMENT on message.token → invalid_token",
            answers: [fcmError(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", fieldViolation: "message.token")],
            outcome: .failed(.invalidToken, attempts: 1), requests: 1
        ),
        ErrorCase(
            name: "400 INVALID_ARGUMENT on another field → rejected_by_platform",
            answers: [fcmError(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'", fieldViolation: "message.android.ttl")],
            outcome: .failed(.rejectedByPlatform, attempts: 1), requests: 1
        ),
        ErrorCase(name: "403 SENDER_ID_MISMATCH → invalid_token", answers: [fcmError(403, "SENDER_ID_MISMATCH", "SenderId mismatch")], outcome: .failed(.invalidToken, attempts: 1), requests: 1),
        ErrorCase(
            name: "429 QUOTA_EXCEEDED with Retry-After 7 → retried after exactly 7 s",
            answers: [fcmError(429, "QUOTA_EXCEEDED", "Quota exceeded", headers: [("retry-after", "7")])],
            outcome: .delivered(attempts: 2), sleeps: [.seconds(7)], requests: 2
        ),
        ErrorCase(
            // The same answer as the project's quota, but only this recipient is throttled: maybe its device alone
            // (RetryingSinkTests covers the second recipient that makes it the sink's).
            name: "429 QUOTA_EXCEEDED without Retry-After for one recipient → its own backoff, not the sink's minute",
            answers: [fcmError(429, "QUOTA_EXCEEDED", "Quota exceeded")],
            outcome: .delivered(attempts: 2), sleeps: [.milliseconds(500)], requests: 2
        ),
        ErrorCase(
            name: "503 UNAVAILABLE twice → retried with backoff",
            answers: [fcmError(503, "UNAVAILABLE", "The service is unavailable"), fcmError(503, "UNAVAILABLE", "The service is unavailable")],
            outcome: .delivered(attempts: 3), sleeps: [.milliseconds(500), .seconds(1)], requests: 3
        ),
        ErrorCase(
            name: "500 INTERNAL until the deadline → unavailable",
            answers: Array(repeating: fcmError(500, "INTERNAL", "Internal error"), count: 20),
            outcome: .failed(.unavailable, attempts: 6), sleeps: [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4)], requests: 6
        ),
        ErrorCase(
            name: "401 THIRD_PARTY_AUTH_ERROR (the app's APNs credentials in Firebase) → rejected_by_platform, the sink goes on",
            answers: [fcmError(401, "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service")],
            outcome: .failed(.rejectedByPlatform, attempts: 1), requests: 1
        ),
        ErrorCase(name: "403 PERMISSION_DENIED → the sink stops", answers: [fcmError(403, "PERMISSION_DENIED", "Permission denied")], outcome: .abandoned(.auth), requests: 1),
    ]

    /// FCM's 429 `QUOTA_EXCEEDED` is the project's quota or one device's rate: the sink tells them apart only if the
    /// failure says it may be either (one recipient's for sure would never throttle the sink; the sink's for sure
    /// would hold every recipient for one busy device).
    @Test("429 QUOTA_EXCEEDED may concern one recipient, and is not known to")
    func quotaExceededScope() {
        let reply = HTTPReply(status: 429, headers: [:], body: Array(#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}]}}"#.utf8))
        let failure = FCMSender.classify(reply)
        #expect(failure.code == .throttled)
        #expect(failure.throttleScope == .sinkOrRecipient, "\(failure)")
    }

    @Test("error answers map to the outcome taxonomy with the right retries and waits", arguments: errorCases)
    func errorTaxonomy(_ errorCase: ErrorCase) async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        fcm.answers.script("the-token", errorCase.answers)
        let clock = VirtualClock()
        let policy = RetryPolicy(initialBackoff: .milliseconds(500), maxBackoff: .seconds(4), jitter: 0, deadline: .seconds(12))
        let sink = RetryingSink(sender: try FCMSender(fcm.configuration, environment: [:]), concurrency: 4, policy: policy, clock: clock.retryClock, logger: sinkLogger)
        let outcomes = Outcomes()
        let notification = try sample("basic-fcm", 1, token: "the-token")
        try await whileRunning(sink) {
            await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            try await outcomes.wait(for: 1)
        }
        let outcome = try #require(outcomes[notification.eventId])
        switch (errorCase.outcome, outcome) {
        case (.delivered(let attempts), .delivered(let actual)):
            #expect(actual == attempts)
        case (.failed(let code, let attempts), .failed(let failure)):
            #expect(failure.code == code, "\(failure)")
            #expect(failure.attempts == attempts)
            #expect(failure.detail.hasPrefix("FCM "), "the detail says what FCM said: \(failure.detail)")
        case (.abandoned(let code), .abandoned(let failure)):
            #expect(failure.code == code)
            #expect(sink.state == .stopped(failure))
        default:
            Issue.record("expected \(errorCase.outcome), got \(outcome)")
        }
        #expect(clock.sleeps == errorCase.sleeps)
        #expect(fcm.sendRequests.count == errorCase.requests)
    }

    @Test("a refused service account (invalid_grant) stops the sink with the token endpoint's reason")
    func refusedServiceAccount() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        fcm.scriptTokenEndpoint([.json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)])
        let sink = try FCMSender.makeSink(fcm.configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        try await whileRunning(sink) {
            for index in 0..<5 {
                let notification = try sample("basic-fcm", index, token: "t\(index)")
                await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
            }
            try await outcomes.wait(for: 5)
        }
        guard case .abandoned(let failure)? = outcomes["event-0"] else {
            Issue.record("expected abandoned, got \(String(describing: outcomes["event-0"]))")
            return
        }
        #expect(failure.code == .auth)
        #expect(failure.detail.contains("invalid_grant"))
        #expect(failure.detail.contains("Invalid JWT Signature."))
        #expect(fcm.sendRequests.isEmpty, "nothing is sent without a token")
    }

    /// Cancelling `run` (the pipeline shutting down) while a send waits for an access token: the exchange is shared
    /// by every send waiting for a token and may take up to the request timeout, but a send of a cancelled sink
    /// does not wait for it, so the sink stops at once and the notification is abandoned (sent after a restart).
    @Test("cancelling run does not wait for a slow token exchange")
    func cancelWhileExchanging() async throws {
        let fcm = try await FakeFCM.start()
        defer { Task { await fcm.shutdown() } }
        let slowTokens = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http1) { _ in
            try? await Task.sleep(for: .seconds(20))
            return .json(200, #"{"access_token":"late","expires_in":3600}"#)
        }
        defer { Task { try? await slowTokens.shutdown() } }
        var configuration = fcm.configuration
        configuration.tokenURL = "\(slowTokens.baseURL)/token"
        configuration.connection.requestTimeout = .seconds(30)
        let sink = try FCMSender.makeSink(configuration, environment: [:], retry: RetryPolicy(), logger: sinkLogger)
        let outcomes = Outcomes()
        let running = Task { await sink.run() }
        let notification = try sample("basic-fcm", 1, token: "t1")
        await sink.submit(notification, completion: outcomes.completion(for: notification.eventId))
        let start = ContinuousClock.now
        while slowTokens.requests.isEmpty {
            if ContinuousClock.now - start > .seconds(10) { throw HarnessError("no token request arrived") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let cancelled = ContinuousClock.now
        running.cancel()
        await running.value
        let took = ContinuousClock.now - cancelled
        #expect(took < .seconds(12), "run ended \(took) after it was cancelled, not after the exchange's 20 s")
        try await outcomes.wait(for: 1, timeout: .seconds(30))
        guard case .abandoned(let reason)? = outcomes[notification.eventId] else {
            Issue.record("expected abandoned, got \(String(describing: outcomes[notification.eventId]))")
            return
        }
        #expect(reason.code == .unavailable, "\(reason)")
        #expect(fcm.sendRequests.isEmpty)
    }

    @Test("configuration errors name the setting, never the key material")
    func configurationErrors() throws {
        #expect(throws: SinkConfigurationError(key: "fcm.serviceAccountFile", reason: "required: the service-account JSON key (or fcm.serviceAccountEnv)")) {
            try FCMSender(FCMSinkConfiguration(), environment: [:])
        }
        #expect(throws: SinkConfigurationError(key: "fcm.serviceAccountEnv", reason: "the environment variable SA_JSON is not set")) {
            try FCMSender(FCMSinkConfiguration(serviceAccount: .environment(name: "SA_JSON")), environment: [:])
        }
        // The key the path was given as, and why it cannot be read (a secret mounted with the wrong mode reads
        // "permission denied (this process runs as uid 65534)", which a test running as root cannot make).
        #expect(throws: SinkConfigurationError(key: "fcm.serviceAccountFile", reason: "cannot read the file '/nonexistent/key.json': no such file")) {
            try FCMSender(FCMSinkConfiguration(serviceAccount: .file(path: "/nonexistent/key.json")), environment: [:])
        }
        let directory = FileManager.default.temporaryDirectory.path
        #expect(throws: SinkConfigurationError(key: "apns.privateKeyFile", reason: "cannot read the file '\(directory)': a directory, not a file")) {
            try APNsSender(APNsSinkConfiguration(keyID: "K", teamID: "T", privateKey: .file(path: directory), topic: "t"), environment: [:])
        }
        let broken = #"{"type":"service_account","project_id":"p","client_email":"e@x","token_uri":"https://t","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#
        do {
            _ = try FCMSender(FCMSinkConfiguration(serviceAccount: .value(broken)), environment: [:])
            Issue.record("a broken key must be refused")
        } catch {
            #expect(error.key == "fcm.serviceAccount (value (hidden))")
            #expect(error.reason.contains("private_key"))
            #expect(!error.description.contains("AAAA"))
        }
    }
}
