/// What a ``LocalHTTPServer`` handler answers.
public struct StubResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Response headers; the server adds content-length when it is missing.
    public var headers: [(name: String, value: String)]
    /// The response body.
    public var body: [UInt8]

    /// Makes a response.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - headers: Response headers (HTTP/2 sends the names lower-cased).
    ///   - body: The response body.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a JSON body and content-type application/json.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - text: The JSON text, sent as UTF-8.
    ///   - headers: More headers, sent after content-type.
    /// - Returns: The response.
    public static func json(
        _ status: Int,
        _ text: String,
        headers: [(name: String, value: String)] = []
    ) -> StubResponse {
        StubResponse(
            status: status,
            headers: [(name: "content-type", value: "application/json")] + headers,
            body: Array(text.utf8)
        )
    }
}
