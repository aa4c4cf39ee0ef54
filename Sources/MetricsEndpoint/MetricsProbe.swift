import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The client side of ``MetricsServer``'s checks: asks a running instance whether it is ready (`/readyz`) or alive
/// (`/healthz`), for container health checks in an image that has no HTTP client of its own.
public enum MetricsProbe {
    /// Which check to ask for.
    public enum Check: String, Sendable, CaseIterable {
        /// `/readyz`: consuming in its group.
        case ready
        /// `/healthz`: the process runs.
        case live

        /// The path the server answers the check at.
        public var path: String { self == .ready ? "/readyz" : "/healthz" }
    }

    /// What the instance answered, or why it did not.
    public struct Answer: Sendable, Equatable {
        /// Whether the check passed (200).
        public var passed: Bool
        /// The answer's text (`ready`, `not ready: starting`, ...) or what went wrong (`no answer from ...: ...`).
        public var text: String
    }

    /// Asks `http://<host>:<port><check's path>`, waiting at most `timeout`.
    public static func ask(host: String, port: Int, check: Check, timeout: Duration) async -> Answer {
        let url = "http://\(urlAuthority(host: host, port: port))\(check.path)"
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .nanoseconds(Int64(timeout.nanoseconds)))
            let body = try await response.body.collect(upTo: 4_096)
            let text = String(buffer: body).trimmingTrailingNewlines
            return Answer(passed: response.status == .ok, text: text.isEmpty ? "HTTP \(response.status.code) from \(url)" : text)
        } catch let error as IOError {
            // NIO's own text of a refused connection repeats itself, with a stray parenthesis ("connection reset (error
            // set): Connection refused) (errno: 111)").
            return Answer(passed: false, text: "no answer from \(url): \(String(cString: strerror(error.errnoCode))) (errno \(error.errnoCode))")
        } catch {
            return Answer(passed: false, text: "no answer from \(url): \(error)")
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var text = Substring(self)
        while text.last == "\n" || text.last == "\r" { text = text.dropLast() }
        return String(text)
    }
}

/// `host:port` as a URL writes it: an IPv6 address in brackets (`::1` as `[::1]`).
func urlAuthority(host: String, port: Int) -> String {
    host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
}
