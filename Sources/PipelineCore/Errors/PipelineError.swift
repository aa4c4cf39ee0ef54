/// Why an event could not be rendered: a machine-readable ``code``, the event id when it could be
/// read, and every problem found (``issues``), each with the path of the field and a reason.
///
/// Validation collects all problems before failing, so one error can list several issues.
public struct PipelineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code (`snake_case` on the wire, e.g. in `reason.code`).
    public struct Code: Hashable, Sendable, CaseIterable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            case invalidJSON = "invalid_json"
            case missingField = "missing_field"
            case invalidField = "invalid_field"
            case unknownTemplate = "unknown_template"
            case payloadTooLarge = "payload_too_large"
            case validationFailed = "validation_failed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The bytes are not a JSON object (see the issue's reason for the byte offset).
        public static let invalidJSON = Code(.invalidJSON)
        /// A required field is absent (or `null`).
        public static let missingField = Code(.missingField)
        /// A field has the wrong type or a value outside its allowed set or range.
        public static let invalidField = Code(.invalidField)
        /// The event names a template no plugin registered.
        public static let unknownTemplate = Code(.unknownTemplate)
        /// The rendered payload exceeds the platform's size limit.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// Several problems of different kinds; see ``PipelineError/issues``.
        public static let validationFailed = Code(.validationFailed)

        /// Every code, in the order above: for counting outcomes by code (a metric's label values).
        public static let allCases: [Code] = Base.allCases.map(Code.init)

        /// The wire form, e.g. `missing_field`.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// One problem with one field.
    public struct Issue: Sendable, Hashable, CustomStringConvertible {
        /// What kind of problem.
        public var code: Code
        /// Where: the field's path in the event.
        public var path: FieldPath
        /// What was wrong, for people (`required`, `expected a string, found a number`, …).
        public var reason: String

        /// Creates an issue.
        public init(_ code: Code, at path: FieldPath, _ reason: String) {
            self.code = code
            self.path = path
            self.reason = reason
        }

        /// `path: reason`.
        public var description: String { "\(path): \(reason)" }
    }

    /// The overall code: the issues' code when they all agree, otherwise ``Code/validationFailed``.
    public var code: Code
    /// The event's id, when it could be read.
    public var eventId: String?
    /// Every problem found, in the order found. Never empty.
    public var issues: [Issue]
    /// The warnings the event's content gave before it failed (a key the template does not read, an attribute
    /// missing): often why a required field is missing, as with a misspelt key.
    public var warnings: [RenderWarning] = []

    /// Creates an error from its issues; the ``code`` is derived from them.
    ///
    /// - Parameters:
    ///   - issues: the problems (at least one).
    ///   - eventId: the event's id, if known.
    public init(issues: [Issue], eventId: String? = nil) {
        self.issues = issues
        self.eventId = eventId
        let codes = Set(issues.map(\.code))
        self.code = codes.count == 1 ? (codes.first ?? .validationFailed) : .validationFailed
    }

    /// Creates an error with a single issue.
    public init(_ code: Code, at path: FieldPath, _ reason: String, eventId: String? = nil) {
        self.init(issues: [Issue(code, at: path, reason)], eventId: eventId)
    }

    /// A copy that carries `eventId` (if it has none yet).
    public func withEventId(_ eventId: String?) -> PipelineError {
        var copy = self
        if copy.eventId == nil { copy.eventId = eventId }
        return copy
    }

    /// A copy whose issues and warnings follow `issues` and `warnings` (those recorded before this error was
    /// thrown), its ``code`` derived from them all. Issues equal to one already there are not repeated.
    public func following(_ issues: [Issue], warnings: [RenderWarning]) -> PipelineError {
        guard !issues.isEmpty || !warnings.isEmpty else { return self }
        var combined = issues
        for issue in self.issues where !combined.contains(issue) { combined.append(issue) }
        var copy = PipelineError(issues: combined, eventId: eventId)
        copy.warnings = warnings + self.warnings
        return copy
    }

    /// One line per issue: `<eventId>: <path>: <reason>`.
    public var description: String {
        let id = eventId ?? "(unknown event)"
        return issues.map { "\(id): \($0.path): \($0.reason)" }.joined(separator: "\n")
    }
}
