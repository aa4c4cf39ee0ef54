/// One request a ``LocalHTTPServer`` received.
public struct RecordedRequest: Sendable {
    /// The request method, such as "POST".
    public var method: String
    /// Path and query exactly as sent, e.g. "/v1/projects/p/messages:send".
    public var path: String
    /// Header (name lower-cased, value) pairs in arrival order; for HTTP/2 the pseudo-headers are not included.
    public var headers: [(name: String, value: String)]
    /// The request body (empty if there was none).
    public var body: [UInt8]
    /// "HTTP/1.1" or "HTTP/2" ("HTTP/1.0" if a client spoke that).
    public var httpVersion: String
    /// An id of the connection the request arrived on, to check connection reuse.
    ///
    /// Ids count up from 1 in the order the server accepted connections; all streams of one HTTP/2
    /// connection share its id.
    public var connectionID: Int
    /// The HTTP/2 stream the request came on (odd, increasing on a connection); nil for HTTP/1.
    public var streamID: Int?

    /// Makes a recorded request; the server makes these, tests rarely need to.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - path: Path and query as sent.
    ///   - headers: Header pairs in arrival order; names are lower-cased here.
    ///   - body: The body bytes.
    ///   - httpVersion: "HTTP/1.1" or "HTTP/2".
    ///   - connectionID: The id of the connection.
    ///   - streamID: The HTTP/2 stream, or nil for HTTP/1.
    public init(
        method: String,
        path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        httpVersion: String,
        connectionID: Int,
        streamID: Int? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        self.body = body
        self.httpVersion = httpVersion
        self.connectionID = connectionID
        self.streamID = streamID
    }

    /// The first value of a header.
    ///
    /// - Parameter name: The header name, in any case.
    /// - Returns: The value of the first header with that name, or nil if there is none.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }

    /// The body decoded as UTF-8 text (invalid bytes become U+FFFD).
    public var bodyText: String {
        String(decoding: body, as: UTF8.self)
    }
}
