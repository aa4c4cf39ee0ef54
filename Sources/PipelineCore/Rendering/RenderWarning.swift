/// A non-fatal remark about a rendered event: a missing personalization attribute, text longer
/// than the platform's guideline, an ignored field. The payload is still produced.
public struct RenderWarning: Sendable, Hashable, CustomStringConvertible {
    /// The field it concerns.
    public var path: FieldPath
    /// What to know, for people.
    public var message: String

    /// Creates a warning.
    public init(path: FieldPath, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`.
    public var description: String { "\(path): \(message)" }
}
