import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import PipelineCore
import PushSinks

/// The TLS and connection settings of an HTTP sink.
public struct HTTPSinkConnection: Sendable, Equatable {
    /// A PEM file of extra certificate authorities to trust besides the system's (a private proxy, or tests).
    public var caCertificateFile: String?
    /// How long connecting may take.
    public var connectTimeout: Duration = .seconds(10)
    /// How long one request may take, from sending to the whole response.
    public var requestTimeout: Duration = .seconds(30)

    /// Default settings.
    public init(caCertificateFile: String? = nil) {
        self.caCertificateFile = caCertificateFile
    }
}

/// An answer from the platform.
struct HTTPReply: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, when it is one.
    var jsonObject: JSONObject? { try? JSONObject(parsing: body) }

    /// The status of an answer no platform gives, with where it points when it is a redirect.
    func unexpectedStatus(configurationKey: String) -> String {
        guard (300..<400).contains(status) else { return "\(status)" }
        let location = headers.first(name: "location").map { " to \($0.prefix(200))" } ?? ""
        return "\(status), a redirect\(location), which it never answers (redirects are not followed): check \(configurationKey)"
    }

    /// `Retry-After` as a duration (seconds or an HTTP date), when given; at most
    /// ``RetryPolicy/longestRetryAfter``.
    func retryAfter(now: Date = Date()) -> Duration? {
        guard let value = headers.first(name: "retry-after")?.trimmingCharacters(in: .whitespaces) else { return nil }
        let longest = RetryPolicy.longestRetryAfter
        if let seconds = Int(value) { return min(.seconds(max(0, seconds)), longest) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        let seconds = min(max(0, date.timeIntervalSince(now)), Double(longest.components.seconds))
        return .milliseconds(Int((seconds * 1000).rounded(.up)))
    }
}

/// async-http-client, set up for a sink: HTTP/2 where the server offers it (many concurrent streams on one
/// connection), HTTP/1.1 otherwise with up to `concurrency` connections, the configured trust roots and timeouts.
final class SinkHTTPClient: Sendable {
    private let client: HTTPClient
    private let requestTimeout: Duration

    /// - Parameter configurationKey: the sink's configuration section (`fcm`, `apns`), for errors.
    init(connection: HTTPSinkConnection, concurrency: Int, configurationKey: String) throws(SinkConfigurationError) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = connection.caCertificateFile {
            // Read now: a file the TLS library cannot use would otherwise fail every connection, as `unavailable`.
            let certificates: [NIOSSLCertificate]
            let pem: [UInt8]
            do {
                pem = try UnreadableFile.contents(of: file)
            } catch {
                throw SinkConfigurationError(key: "\(configurationKey).caCertificateFile", reason: error.description)
            }
            do {
                certificates = try NIOSSLCertificate.fromPEMBytes(pem)
            } catch {
                throw SinkConfigurationError(key: "\(configurationKey).caCertificateFile", reason: "'\(file)' is not a PEM certificate file (\(error))")
            }
            guard !certificates.isEmpty else {
                throw SinkConfigurationError(key: "\(configurationKey).caCertificateFile", reason: "'\(file)' holds no PEM certificate")
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            timeout: .init(connect: .nanoseconds(Int64(connection.connectTimeout.nanoseconds)), read: .nanoseconds(Int64(connection.requestTimeout.nanoseconds))),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, concurrency))
        )
        configuration.httpVersion = .automatic
        // Push APIs and token endpoints never redirect. A redirect followed would turn a POST into a GET without the
        // payload (whose 200 would read as delivered), or post the payload or the signed OAuth assertion to another
        // origin; the 3xx is answered as it is instead.
        configuration.redirectConfiguration = .disallow
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.requestTimeout = connection.requestTimeout
    }

    /// Sends one request and reads the whole answer, within the request timeout from sending to the answer's last
    /// byte.
    ///
    /// - Throws: what async-http-client throws when there is no answer (connection refused or lost, TLS, its
    ///   `deadlineExceeded` when the whole answer took longer than the request timeout), or when the answer's body is
    ///   over 1 MiB (no platform answers that much).
    func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)], body: [UInt8]?) async throws -> HTTPReply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let timeout = requestTimeout
        // async-http-client's own timeout ends once the head has come; the body is read under this one too, or a
        // server trickling it would hold the send (and a request slot) for as long as it likes.
        return try await withThrowingTaskGroup(of: HTTPReply?.self) { group in
            group.addTask { [client, request] in
                let response = try await client.execute(request, timeout: .nanoseconds(timeout.nanoseconds))
                let bytes = try await response.body.collect(upTo: 1 << 20)
                return HTTPReply(status: Int(response.status.code), headers: response.headers, body: Array(buffer: bytes))
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let reply = first else { throw HTTPClientError.deadlineExceeded }
            return reply
        }
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// The failure of a request that got no answer.
    static func unavailable(_ error: any Error, url: String) -> SinkFailure {
        SinkFailure(.unavailable, "no answer from \(url): \(error)")
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating: a timeout of centuries is "never", not a crash).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carried) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflow, !carried else { return seconds < 0 ? .min : .max }
        return total
    }
}

extension JSONValue {
    /// An integer, also from a whole double (`3600.0`).
    var integerValue: Int? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 1e15: Int(value)
        default: nil
        }
    }
}
