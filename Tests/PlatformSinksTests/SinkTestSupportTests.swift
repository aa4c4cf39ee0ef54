import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import SinkTestSupport
import Testing
import _CryptoExtras

@Suite("Sink test servers")
struct SinkTestSupportTests {
    // MARK: - HTTP/2 over TLS

    @Test("TLS + HTTP/2: a POST arrives exactly as sent")
    func http2RoundTrip() async throws {
        let identity = try TestTLSIdentity.makeLocalhost()
        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: .http2) { _ in
            .json(200, #"{"ok":true}"#, headers: [(name: "apns-id", value: "id-1")])
        }
        let client = try makeClient(trusting: identity)
        try await withCleanup(server: server, client: client) {
            var request = HTTPClientRequest(url: server.baseURL + "/3/device/abc?x=1")
            request.method = .POST
            request.headers.add(name: "authorization", value: "bearer token-1")
            request.headers.add(name: "apns-topic", value: "com.example.app")
            request.headers.add(name: "X-Mixed-Case", value: "Value")
            request.body = .bytes(Array(#"{"aps":{"alert":"hi"}}"#.utf8))
            let response = try await client.execute(request, timeout: .seconds(10))
            let responseBody = try await response.body.collect(upTo: 1 << 20)

            #expect(response.status.code == 200)
            #expect(response.version.major == 2)
            #expect(response.headers.first(name: "apns-id") == "id-1")
            #expect(response.headers.first(name: "content-type") == "application/json")
            #expect(String(buffer: responseBody) == #"{"ok":true}"#)

            let recorded = try #require(server.requests.first)
            #expect(server.requests.count == 1)
            #expect(recorded.method == "POST")
            #expect(recorded.path == "/3/device/abc?x=1")
            #expect(recorded.httpVersion == "HTTP/2")
            #expect(recorded.header("Authorization") == "bearer token-1")
            #expect(recorded.header("apns-topic") == "com.example.app")
            #expect(recorded.header("x-mixed-case") == "Value")
            #expect(recorded.bodyText == #"{"aps":{"alert":"hi"}}"#)
            #expect(recorded.headers.allSatisfy { !$0.name.hasPrefix(":") && $0.name == $0.name.lowercased() })
            #expect(recorded.header("host") == nil, "HTTP/2 has :authority, and no host header was sent")
        }
    }

    @Test("TLS + HTTP/2: 50 slow requests are served concurrently on one connection")
    func http2Concurrency() async throws {
        let identity = try TestTLSIdentity.makeLocalhost()
        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: .http2) { request in
            if request.path.hasPrefix("/slow") {
                try? await Task.sleep(for: .milliseconds(200))
            }
            return .json(200, #"{"path":"\#(request.path)"}"#)
        }
        let client = try makeClient(trusting: identity)
        try await withCleanup(server: server, client: client) {
            // One request first, so the client knows the connection speaks HTTP/2 before the burst.
            let warmUp = try await get("/warm-up", from: server, with: client)
            #expect(warmUp.status.code == 200)

            let started = ContinuousClock.now
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        var request = HTTPClientRequest(url: server.baseURL + "/slow/\(index)")
                        request.method = .POST
                        request.body = .bytes(Array("message \(index)".utf8))
                        let response = try await client.execute(request, timeout: .seconds(20))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        return response.status.code
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let elapsed = ContinuousClock.now - started

            #expect(statuses.count == 50)
            #expect(statuses.allSatisfy { $0 == 200 })
            // Concurrency is shown by the server's own count, not by a wall-clock bound (CI machines are loaded);
            // the elapsed time only has to beat one-at-a-time service (50 × 200 ms) by a wide margin.
            #expect(server.peakConcurrentRequests >= 10, "streams were not served concurrently (peak \(server.peakConcurrentRequests))")
            #expect(elapsed < .seconds(8), "50 × 200 ms took \(elapsed)")
            #expect(server.connectionsAccepted == 1)
            let requests = server.requests
            #expect(requests.count == 51)
            #expect(Set(requests.map(\.connectionID)).count == 1)
            #expect(requests.allSatisfy { $0.httpVersion == "HTTP/2" })
            let bodies = Set(requests.filter { $0.path.hasPrefix("/slow/") }.map(\.bodyText))
            #expect(bodies == Set((0..<50).map { "message \($0)" }))
        }
    }

    // MARK: - HTTP/1.1

    @Test("TLS + HTTP/1.1: round trip, trusting the certificate file, by name and by IP address")
    func http1OverTLS() async throws {
        let identity = try TestTLSIdentity.makeLocalhost()
        let certificatePath = try identity.writeCertificate(into: FileManager.default.temporaryDirectory.path)
        defer { try? FileManager.default.removeItem(atPath: certificatePath) }
        #expect(try String(contentsOfFile: certificatePath, encoding: .utf8) == identity.certificatePEM)
        #expect(identity.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(identity.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: .http1) { request in
            .json(201, #"{"echo":"\#(request.bodyText)"}"#)
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(certificatePath)
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(tlsConfiguration: tls)
        )
        try await withCleanup(server: server, client: client) {
            #expect(server.baseURL == "https://localhost:\(server.port)")
            for baseURL in [server.baseURL, "https://127.0.0.1:\(server.port)"] {
                var request = HTTPClientRequest(url: baseURL + "/token")
                request.method = .POST
                request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(Array("hello".utf8))
                let response = try await client.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 20)
                #expect(response.status.code == 201)
                #expect(response.version == .http1_1)
                #expect(response.headers.first(name: "content-type") == "application/json")
                #expect(String(buffer: body) == #"{"echo":"hello"}"#)
            }
            let requests = server.requests
            #expect(requests.count == 2)
            #expect(requests.allSatisfy { $0.httpVersion == "HTTP/1.1" && $0.method == "POST" && $0.path == "/token" })
            #expect(requests.first?.header("Content-Type") == "application/x-www-form-urlencoded")
            #expect(requests.first?.body == Array("hello".utf8))
        }
    }

    @Test("Plain HTTP/1.1: round trip with status and JSON body")
    func plainHTTP1() async throws {
        let server = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http1) { request in
            request.method == "GET"
                ? .json(404, #"{"error":{"status":"NOT_FOUND"}}"#)
                : StubResponse(status: 204)
        }
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        try await withCleanup(server: server, client: client) {
            #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
            let notFound = try await client.execute(
                HTTPClientRequest(url: server.baseURL + "/v1/projects/p/messages:send"),
                timeout: .seconds(10)
            )
            let body = try await notFound.body.collect(upTo: 1 << 20)
            #expect(notFound.status.code == 404)
            #expect(String(buffer: body) == #"{"error":{"status":"NOT_FOUND"}}"#)

            var delete = HTTPClientRequest(url: server.baseURL + "/item")
            delete.method = .DELETE
            let noContent = try await client.execute(delete, timeout: .seconds(10))
            _ = try await noContent.body.collect(upTo: 1 << 20)
            #expect(noContent.status.code == 204)

            let requests = server.requests
            #expect(requests.map(\.method) == ["GET", "DELETE"])
            #expect(requests.first?.path == "/v1/projects/p/messages:send")
            #expect(requests.first?.httpVersion == "HTTP/1.1")
            #expect(requests.first?.header("host") == "127.0.0.1:\(server.port)")
        }
    }

    @Test("Plain HTTP/2 is refused with a clear error")
    func plainHTTP2IsRefused() async throws {
        await #expect(throws: SinkTestSupportError.self) {
            let server = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http2) { _ in
                StubResponse(status: 200)
            }
            try await server.shutdown()
        }
    }

    // MARK: - Outages

    @Test("stop() drops in-flight requests and refuses new ones; restart() serves again on the same port")
    func stopAndRestart() async throws {
        let identity = try TestTLSIdentity.makeLocalhost()
        let server = try await LocalHTTPServer.start(tls: identity, wireProtocol: .http2) { request in
            if request.path == "/hang" {
                try? await Task.sleep(for: .seconds(3))
            }
            return .json(200, "{}")
        }
        var configuration = try clientConfiguration(trusting: identity)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(2)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        try await withCleanup(server: server, client: client) {
            let port = server.port
            let first = try await get("/before", from: server, with: client)
            #expect(first.status.code == 200)

            // A request in flight when the server stops gets no response.
            // A timeout far past the bound below, which a busy machine's stop can take 5 s and more to reach.
            @Sendable func requestHanging() async throws {
                let response = try await client.execute(HTTPClientRequest(url: server.baseURL + "/hang"), timeout: .seconds(60))
                _ = try await response.body.collect(upTo: 1 << 20)
            }
            async let hanging: Void = requestHanging()
            try await waitUntil { server.requests.contains { $0.path == "/hang" } }
            let stopped = ContinuousClock.now
            try await server.stop()
            var hangingFailed = false
            do {
                try await hanging
            } catch {
                hangingFailed = true
            }
            #expect(hangingFailed, "the request in flight when the server stopped should fail")
            #expect(ContinuousClock.now - stopped < .seconds(30), "the in-flight request should fail when the connection closes, not at its 60 s timeout")

            await #expect(throws: (any Error).self) {
                _ = try await get("/during", from: server, with: client)
            }
            try await server.stop()  // Stopping twice is harmless.

            try await server.restart()
            #expect(server.port == port)
            let after = try await getOnceRestarted("/after", from: server, with: client)
            #expect(after.status.code == 200)
            #expect(server.connectionsAccepted == 2)
            #expect(server.requests.map(\.path) == ["/before", "/hang", "/after"])

            try await server.shutdown()
            try await server.shutdown()  // Idempotent.
            await #expect(throws: SinkTestSupportError.self) { try await server.restart() }
        }
    }

    @Test("A plain HTTP/1.1 server on a fixed port can stop and restart")
    func plainStopAndRestart() async throws {
        let server = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http1) { _ in .json(200, "{}") }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        try await withCleanup(server: server, client: client) {
            // Below the ephemeral ports (32768 and up), which a connection could take while the server is stopped.
            #expect((20_000..<32_768).contains(server.port))
            // A second server may use the same port once the first has stopped.
            try await server.stop()
            let second = try await LocalHTTPServer.start(tls: nil, wireProtocol: .http1, port: server.port) { _ in
                .json(202, "{}")
            }
            do {
                let response = try await get("/", from: second, with: client)
                #expect(response.status.code == 202)
                try await second.shutdown()
            } catch {
                try? await second.shutdown()
                throw error
            }

            await #expect(throws: (any Error).self) {
                _ = try await get("/", from: server, with: client)
            }
            try await server.restart()
            let again = try await getOnceRestarted("/", from: server, with: client)
            #expect(again.status.code == 200)
            #expect(server.requests.count == 1)
        }
    }

    // MARK: - Credentials and JWTs

    @Test("RS256: a token signed with the service-account key verifies; a tampered one does not")
    func rs256() throws {
        let account = try TestCredentials.makeServiceAccount(
            projectID: "demo-project",
            clientEmail: "sink@demo-project.iam.gserviceaccount.com",
            tokenURI: "https://localhost:8443/token"
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(account.json.utf8)) as? [String: String])
        #expect(object["type"] == "service_account")
        #expect(object["project_id"] == "demo-project")
        #expect(object["private_key_id"] == account.privateKeyID)
        #expect(object["client_email"] == "sink@demo-project.iam.gserviceaccount.com")
        #expect(object["client_id"] == "1")
        #expect(object["token_uri"] == "https://localhost:8443/token")
        let pem = try #require(object["private_key"])
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))

        let key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        let header = #"{"alg":"RS256","typ":"JWT","kid":"\#(account.privateKeyID)"}"#
        let claims = #"{"iss":"sink@demo-project.iam.gserviceaccount.com","iat":1700000000,"exp":1700003600}"#
        let input = base64URL(header) + "." + base64URL(claims)
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        let token = input + "." + base64URL(signature.rawRepresentation)

        let verified = try JWTVerification.verifyRS256(token, publicKey: account.publicKey)
        #expect(verified.headerString("kid") == account.privateKeyID)
        #expect(verified.headerString("typ") == "JWT")
        #expect(verified.claimString("iss") == "sink@demo-project.iam.gserviceaccount.com")
        #expect(verified.claimInteger("exp") == 1_700_003_600)
        #expect(verified.claimInteger("iss") == nil)
        #expect(verified.claimsJSON == claims)
        #expect(verified.headerJSON == header)

        let forgedClaims = claims.replacingOccurrences(of: "1700003600", with: "1900003600")
        let tampered = base64URL(header) + "." + base64URL(forgedClaims) + "." + base64URL(signature.rawRepresentation)
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyRS256(tampered, publicKey: account.publicKey)
        }

        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyRS256(token, publicKey: other.publicKey)
        }
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyRS256("a.b", publicKey: account.publicKey)
        }

        let wrongAlgorithm = base64URL(#"{"alg":"HS256"}"#) + "." + base64URL(claims) + "."
            + base64URL(signature.rawRepresentation)
        let error = #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyRS256(wrongAlgorithm, publicKey: account.publicKey)
        }
        #expect(error?.message.contains("HS256") == true)
    }

    @Test("ES256: a token signed with the APNs key verifies; a tampered one does not")
    func es256() throws {
        let apns = TestCredentials.makeAPNsKey()
        #expect(apns.p8.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let key = try P256.Signing.PrivateKey(pemRepresentation: apns.p8)
        #expect(key.publicKey.rawRepresentation == apns.publicKey.rawRepresentation)

        let header = #"{"alg":"ES256","kid":"ABC123DEFG"}"#
        let claims = #"{"iss":"TEAM123456","iat":1700000000}"#
        let input = base64URL(header) + "." + base64URL(claims)
        let signature = try key.signature(for: Data(input.utf8))
        let token = input + "." + base64URL(signature.rawRepresentation)

        let verified = try JWTVerification.verifyES256(token, publicKey: apns.publicKey)
        #expect(verified.headerString("kid") == "ABC123DEFG")
        #expect(verified.claimString("iss") == "TEAM123456")
        #expect(verified.claimInteger("iat") == 1_700_000_000)

        let tampered = base64URL(header) + "." + base64URL(#"{"iss":"OTHERTEAM1","iat":1700000000}"#) + "."
            + base64URL(signature.rawRepresentation)
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyES256(tampered, publicKey: apns.publicKey)
        }

        let derSigned = input + "." + base64URL(signature.derRepresentation)
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyES256(derSigned, publicKey: apns.publicKey)
        }

        let otherKey = TestCredentials.makeAPNsKey().publicKey
        #expect(throws: SinkTestSupportError.self) { try JWTVerification.verifyES256(token, publicKey: otherKey) }
        #expect(throws: SinkTestSupportError.self) {
            try JWTVerification.verifyRS256(token, publicKey: try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey)
        }
    }

    @Test("formFields decodes an OAuth token request body")
    func formFieldsDecoding() {
        let body = Array(
            ("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
                + "&assertion=a.b-c_d&note=two+words%21&empty").utf8
        )
        let fields = formFields(body)
        #expect(fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(fields["assertion"] == "a.b-c_d")
        #expect(fields["note"] == "two words!")
        #expect(fields["empty"] == "")
        #expect(formFields([]) == [:])
    }

    // MARK: - Helpers

    private func clientConfiguration(trusting identity: TestTLSIdentity) throws -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(identity.certificatePEM.utf8)))
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        configuration.httpVersion = .automatic
        return configuration
    }

    private func makeClient(trusting identity: TestTLSIdentity) throws -> HTTPClient {
        HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: try clientConfiguration(trusting: identity)
        )
    }

    /// Sends a GET for `path` to `server`.
    private func get(_ path: String, from server: LocalHTTPServer, with client: HTTPClient) async throws
        -> HTTPClientResponse
    {
        try await client.execute(HTTPClientRequest(url: server.baseURL + path), timeout: .seconds(10))
    }

    /// ``get(_:from:with:)`` of a server just restarted, asked again for up to 5 s while the answer is a refused
    /// connection. The client's connection pool, which may not retry a connection (`retryConnectionEstablishment`
    /// false), answers a request made during its back-off after a refused connection with that refusal, without
    /// trying: a CI run failed so once, right after the restart.
    private func getOnceRestarted(_ path: String, from server: LocalHTTPServer, with client: HTTPClient) async throws
        -> HTTPClientResponse
    {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try await get(path, from: server, with: client)
            } catch where ContinuousClock.now < deadline && "\(error)".contains("Connection refused") {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// Runs `body`, then shuts the client and the server down whether or not it threw.
    private func withCleanup(
        server: LocalHTTPServer,
        client: HTTPClient,
        _ body: () async throws -> Void
    ) async throws {
        let outcome: Result<Void, any Error>
        do {
            try await body()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        do {
            try await client.shutdown()
        } catch {
            Issue.record("could not shut the HTTP client down: \(error)")
        }
        do {
            try await server.shutdown()
        } catch {
            Issue.record("could not shut the server down: \(error)")
        }
        try outcome.get()
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for a condition")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private func base64URL(_ text: String) -> String {
        base64URL(Data(text.utf8))
    }

    private func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
