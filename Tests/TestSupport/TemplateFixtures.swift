package import Foundation
package import PipelineCore
package import Testing

/// Shared helpers of the template tests: fixtures, JSON edits, render expectations and table-driven rules.
///
/// Paths and loaders for the repository's samples and seed fixtures (read via `#filePath`).
package enum Fixtures {
    package static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    package static func bytes(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: repositoryRoot.appendingPathComponent(relativePath)))
    }

    /// A neutral sample event from `Config/samples/`.
    package static func sample(_ name: String) throws -> JSONValue {
        try JSONValue(parsing: bytes("Config/samples/\(name).json"))
    }

    /// The `content` of the sample event `name` of `Config/samples/`, with `extra` members added (replacing any of the
    /// same keys).
    package static func sampleContent(_ name: String, adding extra: JSONObject = [:]) throws -> JSONObject {
        var content = try #require(try sample(name).objectValue?["content"]?.objectValue, "\(name) has a content object")
        for (key, value) in extra { content[key] = value }
        return content
    }

    /// A seed example payload copied verbatim into `Tests/Fixtures/seeds/`.
    package static func seed(_ name: String) throws -> JSONValue {
        try JSONValue(parsing: bytes("Tests/Fixtures/seeds/\(name).json"))
    }
}

extension JSONValue {
    /// A copy with the value at `path` (object keys) replaced, or removed when `value` is `nil`.
    package func setting(_ path: [String], to value: JSONValue?) -> JSONValue {
        guard let key = path.first, case .object(var object) = self else { return value ?? self }
        if path.count == 1 {
            object[key] = value
        } else {
            object[key] = (object[key] ?? .object(JSONObject())).setting(Array(path.dropFirst()), to: value)
        }
        return .object(object)
    }

    /// The value at `path` (object keys).
    package func at(_ path: [String]) -> JSONValue? {
        var current: JSONValue? = self
        for key in path { current = current?.objectValue?[key] }
        return current
    }
}

/// Everything an outcome says: the payload bytes, headers, warnings and message id, or the error with every issue.
package func outcomeSummary(_ outcome: RenderOutcome) -> String {
    switch outcome {
    case .rendered(let notification):
        "\(String(decoding: notification.payloadBytes, as: UTF8.self)) \(notification.headers) \(notification.warnings) \(notification.messageId)"
    case .failed(let error):
        "\(error) \(error.issues) \(error.eventId ?? "-")"
    }
}

/// Renders `event` as the pipeline does, from its bytes (read in place as a ``JSONDocument``), and records a test
/// issue unless rendering it as a tree (``TemplateRegistry/render(event:)``) gives exactly the same outcome, and so
/// does rendering it again with a ``RenderScratch`` that has rendered it once already (as a worker's scratch is
/// reused from event to event).
package func renderBothWays(_ registry: TemplateRegistry, _ event: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) -> RenderOutcome {
    let scratch = RenderScratch()
    let outcome = registry.render(eventBytes: event.encoded(), scratch: scratch)
    let treeOutcome = registry.render(event: event)
    if outcomeSummary(outcome) != outcomeSummary(treeOutcome) {
        Issue.record("read in place: \(outcomeSummary(outcome)); as a tree: \(outcomeSummary(treeOutcome))", sourceLocation: sourceLocation)
    }
    let again = registry.render(eventBytes: event.encoded(), scratch: scratch)
    if outcomeSummary(again) != outcomeSummary(outcome) {
        Issue.record("with the scratch used again: \(outcomeSummary(again)); the first time: \(outcomeSummary(outcome))", sourceLocation: sourceLocation)
    }
    return outcome
}

/// Renders `event` and returns the notification, recording a test issue on failure.
package func renderExpectingSuccess(_ registry: TemplateRegistry, _ event: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) -> RenderedNotification? {
    switch renderBothWays(registry, event, sourceLocation: sourceLocation) {
    case .rendered(let notification):
        return notification
    case .failed(let error):
        Issue.record("render failed: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Renders `event` and returns the error, recording a test issue if it rendered.
package func renderExpectingFailure(_ registry: TemplateRegistry, _ event: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) -> PipelineError? {
    switch renderBothWays(registry, event, sourceLocation: sourceLocation) {
    case .rendered(let notification):
        Issue.record("expected a failure, rendered \(String(decoding: notification.payloadBytes, as: UTF8.self))", sourceLocation: sourceLocation)
        return nil
    case .failed(let error):
        return error
    }
}

/// One validation rule: a mutation of a sample that must fail with `code` at `path`.
package struct RuleCase: CustomTestStringConvertible, Sendable {
    package let rule: String
    package let sample: String
    package let mutations: [([String], JSONValue?)]
    package let path: String
    package let code: PipelineError.Code

    package init(_ rule: String, _ sample: String, _ mutations: [([String], JSONValue?)], path: String, code: PipelineError.Code) {
        self.rule = rule
        self.sample = sample
        self.mutations = mutations
        self.path = path
        self.code = code
    }

    package var testDescription: String { rule }

    package func event() throws -> JSONValue {
        var event = try Fixtures.sample(sample)
        for (path, value) in mutations { event = event.setting(path, to: value) }
        return event
    }

    package func check(_ registry: TemplateRegistry, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let error = renderExpectingFailure(registry, try event(), sourceLocation: sourceLocation) else { return }
        let matching = error.issues.filter { "\($0.path)" == path }
        #expect(!matching.isEmpty, "no issue at \(path); got \(error.issues)", sourceLocation: sourceLocation)
        #expect(matching.allSatisfy { $0.code == code }, "wrong code at \(path): \(matching)", sourceLocation: sourceLocation)
        #expect(error.eventId != nil, sourceLocation: sourceLocation)
    }
}

extension Fixtures {
    /// A sample from `Config/samples/` rendered with its event id, recipient and token replaced: notifications for
    /// sink tests.
    package static func notification(
        _ sample: String,
        registry: TemplateRegistry,
        eventId: String,
        recipient: String,
        token: String,
        expiresAt: Timestamp? = nil
    ) throws -> RenderedNotification {
        let event = try Self.sample(sample)
            .setting(["eventId"], to: .string(eventId))
            .setting(["recipient", "id"], to: .string(recipient))
            .setting(["recipient", "token"], to: .string(token))
            .setting(["expiresAt"], to: expiresAt.map { .string($0.rfc3339) })
        switch renderBothWays(registry, event) {
        case .rendered(let notification):
            return notification
        case .failed(let error):
            throw error
        }
    }
}
