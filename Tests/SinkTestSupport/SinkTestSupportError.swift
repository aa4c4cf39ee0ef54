/// An error thrown by the sink test servers, credential helpers and JWT verification.
///
/// The ``message`` says what went wrong in words meant for a failing test's output.
public struct SinkTestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let message: String
    /// The file in SinkTestSupport that threw the error.
    public let file: String
    /// The line in ``file`` that threw the error.
    public let line: Int

    /// Makes an error with a descriptive message.
    ///
    /// - Parameters:
    ///   - message: What went wrong.
    ///   - file: The throwing file; defaults to the caller's.
    ///   - line: The throwing line; defaults to the caller's.
    public init(_ message: String, file: String = #fileID, line: Int = #line) {
        self.message = message
        self.file = file
        self.line = line
    }

    /// The message with the place it was thrown.
    public var description: String {
        "SinkTestSupportError: \(message) (\(file):\(line))"
    }
}
