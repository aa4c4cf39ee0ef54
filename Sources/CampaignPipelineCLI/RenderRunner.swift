public import PipelineCore
public import PipelineRuntime

/// The logic of `campaign-pipeline render`, free of I/O so tests can drive it with their own
/// registry and capture what it writes.
///
/// Input is a byte stream holding one or more JSON events separated by whitespace: a file with one
/// (pretty-printed) object, or JSON lines. After a JSON syntax error the runner resumes at the next
/// line that starts with `{` in column 0, so one broken line of a JSON-lines file does not hide the
/// others.
public struct RenderRunner: Sendable {
    /// What a run did.
    public struct Summary: Sendable, Hashable {
        /// Events rendered.
        public var rendered = 0
        /// Events that failed.
        public var failed = 0
        /// Events rendered with at least one warning (counted in ``rendered`` too).
        public var warned = 0

        /// Creates a summary.
        public init(rendered: Int = 0, failed: Int = 0, warned: Int = 0) {
            self.rendered = rendered
            self.failed = failed
            self.warned = warned
        }
    }

    /// The templates to render with.
    public var registry: TemplateRegistry
    /// Write `{"platform","messageId","token","headers","payload","warnings"}` instead of the bare
    /// payload, and keep warnings inside it instead of on the diagnostics stream.
    public var isEnvelope: Bool

    /// Campaign definitions for events without `content` of their own, which render their campaign's stored content
    /// (as the pipeline does from the definitions topic); `nil` renders every event on its own.
    public var campaigns: CampaignTable?

    /// Creates a runner.
    public init(registry: TemplateRegistry, isEnvelope: Bool = false, campaigns: CampaignTable? = nil) {
        self.registry = registry
        self.isEnvelope = isEnvelope
        self.campaigns = campaigns
    }

    /// A `warning: …` line for each name a plugin took from another in ``registry``
    /// (``TemplateRegistry/overrides``): that name's events render with the later plugin, which is often a mistake.
    public var overrideWarnings: [String] {
        registry.overrides.map { "warning: \($0)" }
    }

    /// Renders every event in `input`.
    ///
    /// - Parameters:
    ///   - input: the bytes of one file (or of standard input).
    ///   - source: the input's name for error messages (`-` for standard input).
    ///   - output: receives one JSON line per rendered event (without the newline).
    ///   - diagnostics: receives `error: …` and `warning: …` lines (without the newline).
    /// - Returns: how many events rendered (and of those, with warnings) and failed.
    public func run(input: [UInt8], source: String, output: (String) -> Void, diagnostics: (String) -> Void) -> Summary {
        var summary = Summary()
        let scratch = RenderScratch()  // one for the whole input, reused from event to event
        var parser = JSONParser(bytes: input)
        while true {
            let outcome: RenderOutcome
            do throws(JSONParseError) {
                // Each event's bytes are found and checked, then read in place (no tree of it is built).
                guard let range = try parser.nextValueRange() else { break }
                outcome = render(input[range], scratch: scratch)
            } catch {
                // By line and column, as people find it in a JSON-lines file, and by byte.
                let (line, column) = ConfigurationFile.position(of: error.offset, in: input)
                outcome = .failed(
                    PipelineError(.invalidJSON, at: .root, "invalid JSON in \(source): \(error.kind) at line \(line), column \(column) (byte \(error.offset))")
                )
                // From where the failed value began: a line cut short runs on into the next, and the error is
                // found there, so skipping from the error would lose the event on that line.
                parser.skip(toLineStartingWith: UInt8(ascii: "{"), after: parser.valueStart)
            }
            switch outcome {
            case .rendered(let notification):
                summary.rendered += 1
                if !notification.warnings.isEmpty { summary.warned += 1 }
                if isEnvelope {
                    output(Self.envelope(for: notification).jsonString)
                } else {
                    output(String(decoding: notification.payloadBytes, as: UTF8.self))
                    for warning in notification.warnings {
                        diagnostics("warning: \(notification.eventId): \(warning.path): \(warning.message)")
                    }
                }
            case .failed(let error):
                summary.failed += 1
                for line in Self.errorLines(error) { diagnostics(line) }
            }
        }
        return summary
    }

    /// The outcome of one event's bytes: with ``campaigns``, an event without content renders its campaign's
    /// definition as of the event's time (the version it names, or the latest).
    private func render(_ bytes: ArraySlice<UInt8>, scratch: RenderScratch) -> RenderOutcome {
        guard let campaigns else { return registry.render(eventBytes: bytes, scratch: scratch) }
        do throws(PipelineError) {
            let request = try PushRequest(json: bytes, scratch: scratch)
            let content = try campaigns.content(for: request, asOf: request.occurredAt, registry: registry)
            return .rendered(try registry.render(request, content: content, scratch: scratch))
        } catch {
            return .failed(error)
        }
    }

    /// `error: <eventId>: <path>: <reason>`, one line per issue, then `warning: <eventId>: <path>: <message>` for
    /// each warning the event gave before it failed (a misspelt key is often why a required field is missing);
    /// `(unknown)` when the id could not be read.
    public static func errorLines(_ error: PipelineError) -> [String] {
        let id = error.eventId ?? "(unknown)"
        return error.issues.map { "error: \(id): \($0.path): \($0.reason)" }
            + error.warnings.map { "warning: \(id): \($0.path): \($0.message)" }
    }

    /// The `--envelope` object for a rendered notification.
    public static func envelope(for notification: RenderedNotification) -> JSONValue {
        var headers = JSONObject()
        for header in notification.headers { headers[header.name] = .string(header.value) }
        let warnings = notification.warnings.map { warning -> JSONValue in
            ["path": .string(warning.path.description), "message": .string(warning.message)]
        }
        return [
            "platform": .string(notification.platform.rawValue),
            "messageId": .string(notification.messageId),
            "token": .string(notification.token),
            "headers": .object(headers),
            "payload": notification.payload.jsonValue,
            "warnings": .array(warnings),
        ]
    }
}
