public import _CryptoExtras
public import Crypto
import Foundation
public import PlatformSinks
import PipelineCore
import Synchronization

/// Answers scripted per device token: each request for a token takes the next answer of its queue; a token with
/// no answers left (or none scripted) gets `fallback`.
public final class ScriptedAnswers: Sendable {
    private let queues = Mutex<[String: [StubResponse]]>([:])
    private let given = Mutex<[(token: String, status: Int)]>([])
    private let fallbackAnswer: Mutex<StubResponse>

    init(fallback: StubResponse) {
        self.fallbackAnswer = Mutex(fallback)
    }

    /// Queues answers for a token.
    public func script(_ token: String, _ answers: [StubResponse]) {
        queues.withLock { $0[token, default: []] += answers }
    }

    /// The answer for every token without a scripted one (a whole-platform failure, or success again).
    public func setFallback(_ answer: StubResponse) {
        fallbackAnswer.withLock { $0 = answer }
    }

    /// Every answer given so far: the token and the status, in order.
    public var answered: [(token: String, status: Int)] { given.withLock { $0 } }

    /// The tokens that were answered 200 at least once.
    public var acceptedTokens: Set<String> { Set(answered.filter { $0.status == 200 }.map(\.token)) }

    func next(for token: String) -> StubResponse {
        let answer = scripted(for: token) ?? fallbackAnswer.withLock { $0 }
        given.withLock { $0.append((token, answer.status)) }
        return answer
    }

    func scripted(for token: String) -> StubResponse? {
        queues.withLock { queues in
            guard var queue = queues[token], !queue.isEmpty else { return nil }
            let answer = queue.removeFirst()
            queues[token] = queue
            return answer
        }
    }
}

/// A local stand-in for Google's OAuth token endpoint and FCM HTTP v1, over TLS, with a service account made for
/// it: point an ``FCMSinkConfiguration`` at it with ``configuration``.
public final class FakeFCM: Sendable {
    /// The server (requests, outage simulation).
    public let server: LocalHTTPServer
    /// The project messages are sent in.
    public let projectID = "test-project"
    /// The service account's e-mail (the assertion's issuer).
    public let clientEmail = "pipeline@test-project.iam.gserviceaccount.com"
    /// The service-account key file's contents.
    public let serviceAccountJSON: String
    /// Its private key id (the assertion's `kid`).
    public let privateKeyID: String
    /// The public key assertions verify with.
    public let publicKey: _RSA.Signing.PublicKey
    /// The trust root for the server's certificate.
    public let caCertificateFile: String
    /// Answers of `messages:send` per device token (default 200).
    public let answers = ScriptedAnswers(fallback: .json(200, #"{"name":"projects/test-project/messages/0:1"}"#))
    private let tokenAnswers = ScriptedAnswers(fallback: StubResponse(status: 500))
    private let tokenLifetime = Mutex(3600)
    private let issued = Mutex(0)

    /// Queues answers of the token endpoint (used before issuing tokens again).
    public func scriptTokenEndpoint(_ answers: [StubResponse]) {
        tokenAnswers.script("token", answers)
    }

    /// Sets `expires_in` of the access tokens issued from now on (default 3600 s).
    public func setTokenLifetime(seconds: Int) {
        tokenLifetime.withLock { $0 = seconds }
    }

    /// Starts the server (HTTP/2 over TLS unless `http1`), with a fresh certificate written into a temporary
    /// directory of its own, which ``shutdown()`` removes.
    public static func start(wireProtocol: LocalHTTPServer.WireProtocol = .http2) async throws -> FakeFCM {
        let identity = try TestTLSIdentity.makeLocalhost()
        let caFile = try writeTrustRoot(identity)
        let box = Mutex<FakeFCM?>(nil)
        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: wireProtocol) { request in
            guard let fake = box.withLock({ $0 }) else { return StubResponse(status: 503) }
            return fake.answer(request)
        }
        let tokenURI = "\(server.baseURL)/token"
        let fake = try FakeFCM(server: server, caCertificateFile: caFile, tokenURI: tokenURI)
        box.withLock { $0 = fake }
        return fake
    }

    private init(server: LocalHTTPServer, caCertificateFile: String, tokenURI: String) throws {
        self.server = server
        self.caCertificateFile = caCertificateFile
        let account = try TestCredentials.makeServiceAccount(projectID: "test-project", clientEmail: "pipeline@test-project.iam.gserviceaccount.com", tokenURI: tokenURI)
        self.serviceAccountJSON = account.json
        self.privateKeyID = account.privateKeyID
        self.publicKey = account.publicKey
    }

    /// A sink configuration pointing at this server.
    public var configuration: FCMSinkConfiguration {
        var configuration = FCMSinkConfiguration(serviceAccount: .value(serviceAccountJSON))
        configuration.baseURL = server.baseURL
        configuration.connection.caCertificateFile = caCertificateFile
        // Generous: in the parallel test run on two cores a connection to this local server once took over 2 s, and
        // the attempt that timed out was retried, one more than the tests count.
        configuration.connection.requestTimeout = .seconds(30)
        configuration.connection.connectTimeout = .seconds(30)
        return configuration
    }

    /// The token requests received.
    public var tokenRequests: [RecordedRequest] { server.requests.filter { $0.path == "/token" } }
    /// The send requests received.
    public var sendRequests: [RecordedRequest] { server.requests.filter { $0.path.hasPrefix("/v1/") } }
    /// The access tokens issued so far, in order.
    public var issuedTokens: [String] { (0..<issued.withLock { $0 }).map { "access-token-\($0 + 1)" } }

    private func answer(_ request: RecordedRequest) -> StubResponse {
        if request.path == "/token" {
            if let scripted = tokenAnswers.scripted(for: "token") { return scripted }
            let number = issued.withLock { count in
                count += 1
                return count
            }
            return .json(200, #"{"access_token":"access-token-\#(number)","expires_in":\#(tokenLifetime.withLock { $0 }),"token_type":"Bearer"}"#)
        }
        guard request.method == "POST", request.path == "/v1/projects/\(projectID)/messages:send" else {
            return .json(404, #"{"error":{"code":404,"message":"no such path \#(request.path)","status":"NOT_FOUND"}}"#)
        }
        let token = (try? JSONObject(parsing: request.body))?["message"]?.objectValue?["token"]?.stringValue ?? ""
        return answers.next(for: token)
    }

    /// Stops the server for good and removes its certificate's directory.
    public func shutdown() async {
        try? await server.shutdown()
        removeTrustRoot(caCertificateFile)
    }
}

/// A local stand-in for the APNs provider API (HTTP/2 over TLS) with an auth key made for it: point an
/// ``APNsSinkConfiguration`` at it with ``configuration``.
public final class FakeAPNs: Sendable {
    /// The server (requests, outage simulation).
    public let server: LocalHTTPServer
    /// The .p8 key's contents.
    public let p8: String
    /// The public key provider tokens verify with.
    public let publicKey: P256.Signing.PublicKey
    /// The trust root for the server's certificate.
    public let caCertificateFile: String
    /// The key id, team id and topic configured.
    public let keyID = "KEY1234567"
    public let teamID = "TEAM123456"
    public let topic = "com.example.campaigns"
    /// Answers per device token (default 200).
    public let answers: ScriptedAnswers
    /// Holds every answer back while closed (open at the start).
    public let gate: AnswerGate

    /// Starts the server with a fresh certificate written into a temporary directory of its own, which
    /// ``shutdown()`` removes.
    ///
    /// - Parameter responseDelay: how long each answer takes (so concurrent streams overlap visibly).
    public static func start(responseDelay: Duration = .zero) async throws -> FakeAPNs {
        let identity = try TestTLSIdentity.makeLocalhost()
        let caFile = try writeTrustRoot(identity)
        let answers = ScriptedAnswers(fallback: StubResponse(status: 200))
        let gate = AnswerGate()
        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: .http2) { request in
            guard request.method == "POST", request.path.hasPrefix("/3/device/") else {
                return .json(404, #"{"reason":"BadPath"}"#)
            }
            if responseDelay > .zero { try? await Task.sleep(for: responseDelay) }
            await gate.pass()
            return answers.next(for: String(request.path.dropFirst("/3/device/".count)))
        }
        return FakeAPNs(server: server, caCertificateFile: caFile, answers: answers, gate: gate)
    }

    private init(server: LocalHTTPServer, caCertificateFile: String, answers: ScriptedAnswers, gate: AnswerGate) {
        self.server = server
        self.gate = gate
        self.caCertificateFile = caCertificateFile
        let key = TestCredentials.makeAPNsKey()
        self.p8 = key.p8
        self.publicKey = key.publicKey
        self.answers = answers
    }

    /// A sink configuration pointing at this server.
    public var configuration: APNsSinkConfiguration {
        var configuration = APNsSinkConfiguration(keyID: keyID, teamID: teamID, privateKey: .value(p8), topic: topic)
        configuration.baseURL = server.baseURL
        configuration.connection.caCertificateFile = caCertificateFile
        // Generous: in the parallel test run on two cores a connection to this local server once took over 2 s, and
        // the attempt that timed out was retried, one more than the tests count.
        configuration.connection.requestTimeout = .seconds(30)
        configuration.connection.connectTimeout = .seconds(30)
        return configuration
    }

    /// Stops the server for good and removes its certificate's directory.
    public func shutdown() async {
        try? await server.shutdown()
        removeTrustRoot(caCertificateFile)
    }
}

/// Holds a fake platform's answers back while closed, to keep requests in flight until a test has done something
/// to them (a GOAWAY). Open at the start.
public final class AnswerGate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiting: [CheckedContinuation<Void, Never>])>((true, []))

    /// Holds back the answers of requests from now on.
    public func close() {
        state.withLock { $0.isOpen = false }
    }

    /// Lets every held answer and every later one go.
    public func open() {
        let waiting = state.withLock { state in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns at once while open; while closed, once the gate opens.
    func pass() async {
        await withCheckedContinuation { continuation in
            let mayPass = state.withLock { state in
                if state.isOpen { return true }
                state.waiting.append(continuation)
                return false
            }
            if mayPass { continuation.resume() }
        }
    }
}

/// Writes `identity`'s certificate into a new temporary directory and returns the file's path.
private func writeTrustRoot(_ identity: TestTLSIdentity) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-platform-\(UUID().uuidString)")
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    } catch {
        throw SinkTestSupportError("could not make a directory for the certificate at \(directory.path): \(error)")
    }
    return try identity.writeCertificate(into: directory.path)
}

/// Removes the directory ``writeTrustRoot(_:)`` made for `file`.
private func removeTrustRoot(_ file: String) {
    try? FileManager.default.removeItem(at: URL(fileURLWithPath: file).deletingLastPathComponent())
}
