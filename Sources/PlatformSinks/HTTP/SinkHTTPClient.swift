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

    /// `Retry-After` as a duration (seconds or an HTTP date), when given.
    func retryAfter(now: Date = Date()) -> Duration? {
        guard let value = headers.first(name: "retry-after")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int((date.timeIntervalSince(now) * 1000).rounded(.up))))
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
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw SinkConfigurationError(key: "\(configurationKey).caCertificateFile", reason: "cannot read '\(file)'")
            }
            // Read now: a file the TLS library cannot use would otherwise fail every connection, as `unavailable`.
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(file)
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
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.requestTimeout = connection.requestTimeout
    }

    /// Sends one request and reads the whole answer.
    ///
    /// - Throws: what async-http-client throws when there is no answer (connection refused or lost, timeouts, TLS),
    ///   or when the answer's body is over 1 MiB (no platform answers that much).
    func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)], body: [UInt8]?) async throws -> HTTPReply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let response = try await client.execute(request, timeout: .nanoseconds(Int64(requestTimeout.nanoseconds)))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return HTTPReply(status: Int(response.status.code), headers: response.headers, body: Array(buffer: bytes))
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
