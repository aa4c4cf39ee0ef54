public import PipelineCore

/// The campaign state folded from `campaign.definitions` (event-sourced): each campaign's definitions by
/// version and its cancellations, each stamped with its event time, so the state can be read as of any instant.
///
/// Reading "as of" an instant is what makes replays deterministic: a send is judged against the definitions
/// and cancellations that existed at its decision time, whatever was appended to the topic since. Events of one
/// campaign at the same instant (times are often whole seconds: a cancellation and a relaunch within one) are
/// ordered as they are on the topic, where the campaign's key keeps them in one partition: the later one wins.
public struct CampaignTable: Sendable {
    /// How far a table has read the definitions topic: per partition, the offset after the last record folded.
    ///
    /// A send's decision is reproducible from its decision time and the horizon of the table it was judged with: a
    /// cancellation or a new version read later, even one dated before the decision time, is not part of it
    /// (``reading(through:)``).
    public struct Horizon: Sendable, Hashable {
        /// Per partition of the definitions topic, the offset after the last record read (none read: absent).
        public var offsets: [Int32: Int64]

        /// A horizon at `offsets`.
        public init(_ offsets: [Int32: Int64] = [:]) {
            self.offsets = offsets
        }

        /// Whether the record at `offset` of `partition` is within the horizon (had been read).
        func holds(partition: Int32, offset: Int64) -> Bool {
            offset < offsets[partition] ?? 0
        }

        /// Whether every record within `other` is within this horizon.
        public func covers(_ other: Horizon) -> Bool {
            other.offsets.allSatisfy { $0.value <= offsets[$0.key] ?? 0 }
        }
    }

    /// Where a campaign event was read on the definitions topic.
    struct Position: Sendable, Equatable {
        var partition: Int32
        var offset: Int64
    }

    /// One stored definition of a campaign.
    public struct Definition: Sendable, Equatable {
        /// The definition version.
        public var version: Int
        /// The template the definition renders with.
        public var template: String?
        /// The content to render for sends without their own.
        public var content: CampaignContent
        /// When it was defined.
        public var definedAt: Timestamp
        /// Its place among the campaign's events in the order they were folded (the topic's).
        var sequence = 0
        /// Where it was read on the definitions topic (`nil` when not read from it: a file, a test).
        var position: Position?

        /// Later definitions sort after earlier ones: by version, then time, then place on the topic.
        fileprivate static func isEarlier(_ lhs: Definition, _ rhs: Definition) -> Bool {
            (lhs.version, lhs.definedAt, lhs.sequence) < (rhs.version, rhs.definedAt, rhs.sequence)
        }
    }

    /// One campaign's events, each with its place in the order they were folded.
    private struct History: Sendable {
        var definitions: [Definition] = []
        var cancellations: [(at: Timestamp, sequence: Int, position: Position?)] = []
        var eventsFolded = 0

        mutating func nextSequence() -> Int {
            defer { eventsFolded += 1 }
            return eventsFolded
        }
    }

    private var campaigns: [String: History] = [:]

    /// How far the table has read the definitions topic (records that are not campaign events included).
    public private(set) var horizon = Horizon()

    /// When set, the events read beyond it are left out of every answer (``reading(through:)``).
    private var limit: Horizon?

    /// An empty table.
    public init() {}

    /// The number of campaigns known.
    public var count: Int { campaigns.count }

    /// The table as it was when it had read the definitions topic up to `horizon`: the events read beyond it are left
    /// out of every answer, so that a send judged again is judged against what its first judging knew. `nil` leaves
    /// nothing out. (The events are kept: a view costs no copy.)
    public func reading(through horizon: Horizon?) -> CampaignTable {
        var view = self
        view.limit = horizon == self.horizon ? nil : horizon
        return view
    }

    /// Whether an event read at `position` is part of the answers (see ``reading(through:)``).
    private func isVisible(_ position: Position?) -> Bool {
        guard let limit, let position else { return true }
        return limit.holds(partition: position.partition, offset: position.offset)
    }

    /// Folds the record at `offset` of `partition` of the definitions topic into the table, and notes that the
    /// table has read it (whether or not it is a campaign event).
    ///
    /// - Throws: ``PipelineError`` naming the field when the record is not a campaign event.
    public mutating func apply(json bytes: [UInt8], partition: Int32, offset: Int64) throws(PipelineError) {
        horizon.offsets[partition] = max(horizon.offsets[partition] ?? 0, offset + 1)
        try apply(json: bytes, at: Position(partition: partition, offset: offset))
    }

    /// Folds one campaign event read from elsewhere than the definitions topic (a file): it is part of every answer.
    ///
    /// - Throws: ``PipelineError`` naming the field when the record is not a campaign event.
    public mutating func apply(json bytes: [UInt8]) throws(PipelineError) {
        try apply(json: bytes, at: nil)
    }

    private mutating func apply(json bytes: [UInt8], at position: Position?) throws(PipelineError) {
        let object = try JSONObject(parsing: bytes)
        let campaignId = try Self.string(object, "campaignId")
        let occurredAt = try Self.timestamp(object, "occurredAt")
        switch try Self.string(object, "type") {
        case "campaign.defined":
            guard let contentObject = object["content"]?.objectValue else {
                throw PipelineError(.missingField, at: FieldPath("content"), "required, an object")
            }
            let version: Int
            switch object["version"] {
            case .int(let number)?: version = number
            case nil, .null?:
                let latest = campaigns[campaignId]?.definitions.map(\.version).max() ?? 0
                // A definition given the largest version leaves no next one to number this with (it trapped).
                guard latest < Int.max else {
                    throw PipelineError(.missingField, at: FieldPath("version"), "required: the campaign's latest version is \(latest), which has no next one")
                }
                version = latest + 1
            default: throw PipelineError(.invalidField, at: FieldPath("version"), "expected an integer")
            }
            // Of another type, it was taken as absent: the definition then rendered for whatever template a send named.
            let template: String?
            switch object["template"] {
            case .string(let name)?: template = name
            case nil, .null?: template = nil
            default: throw PipelineError(.invalidField, at: FieldPath("template"), "expected a string, the name of a template")
            }
            var definition = Definition(
                version: version,
                template: template,
                content: CampaignContent(contentObject),
                definedAt: occurredAt
            )
            definition.sequence = campaigns[campaignId, default: History()].nextSequence()
            definition.position = position
            campaigns[campaignId]?.definitions.append(definition)
        case "campaign.cancelled":
            let sequence = campaigns[campaignId, default: History()].nextSequence()
            campaigns[campaignId]?.cancellations.append((occurredAt, sequence, position))
        case let other:
            throw PipelineError(.invalidField, at: FieldPath("type"), "expected campaign.defined or campaign.cancelled, found '\(other)'")
        }
    }

    /// Whether the campaign is cancelled as of `instant`: a cancellation at or before it, with no definition
    /// after that cancellation (a new definition reopens a campaign; at the same instant, one after it on the topic).
    public func isCancelled(_ campaignId: String, asOf instant: Timestamp) -> Bool {
        guard let history = campaigns[campaignId] else { return false }
        guard
            let cancelled = history.cancellations.lazy.filter({ $0.at <= instant && isVisible($0.position) })
                .max(by: { ($0.at, $0.sequence) < ($1.at, $1.sequence) })
        else { return false }
        return !history.definitions.contains { definition in
            definition.definedAt <= instant && (definition.definedAt, definition.sequence) > (cancelled.at, cancelled.sequence)
                && isVisible(definition.position)
        }
    }

    /// The content `request` renders as of `instant`: its own, or else its campaign's definition (the version it
    /// names, or the latest defined by then), which must be written for the template the request names (aliases
    /// resolved by `registry`): the content of another template renders a different notification (a timer
    /// campaign's content sent as `basic` loses its countdown).
    ///
    /// - Throws: ``PipelineError`` at `content` when the event has none and the campaign has no such definition; at
    ///   `template`, naming both templates, when the definition is another template's.
    public func content(for request: PushRequest, asOf instant: Timestamp, registry: TemplateRegistry) throws(PipelineError) -> CampaignContent {
        if let content = request.content { return content }
        guard let definition = definition(request.campaignId, version: request.campaignVersion, asOf: instant) else {
            let which = request.campaignVersion.map { "version \($0) of " } ?? ""
            // Held, but defined later than the send is judged at (a replay judges at each event's own time).
            let later = campaigns[request.campaignId]?.definitions
                .filter { (request.campaignVersion == nil || $0.version == request.campaignVersion) && isVisible($0.position) }
                .map(\.definedAt).min()
            let reason =
                if let later {
                    "required: the event has no content and \(which)campaign '\(request.campaignId)' was defined only at \(later.rfc3339), after \(instant.rfc3339), the time the send is judged at"
                } else {
                    "required: the event has no content and \(which)campaign '\(request.campaignId)' has no definition"
                }
            throw PipelineError(.missingField, at: FieldPath("content"), reason, eventId: request.eventId)
        }
        if let defined = definition.template,
            let definedID = try? registry.renderer(named: defined).templateID,
            let requestedID = try? registry.renderer(named: request.template).templateID,
            definedID != requestedID
        {
            throw PipelineError(
                .invalidField,
                at: FieldPath("template"),
                "'\(request.template)' is not the template of campaign '\(request.campaignId)' version \(definition.version), '\(defined)', whose content the event renders",
                eventId: request.eventId
            )
        }
        return definition.content
    }

    /// The definition to render as of `instant`: the given version, or the latest version defined by then. A version
    /// defined more than once is its latest definition by then (at the same instant, the one later on the topic),
    /// whether the send names it or not.
    public func definition(_ campaignId: String, version: Int?, asOf instant: Timestamp) -> Definition? {
        guard let history = campaigns[campaignId] else { return nil }
        let known = history.definitions.lazy.filter { $0.definedAt <= instant && isVisible($0.position) }
        if let version {
            return known.filter { $0.version == version }.max(by: Definition.isEarlier)
        }
        return known.max(by: Definition.isEarlier)
    }

    /// Whether the table holds a definition of the campaign (the given version, or any), whatever its time: a send
    /// whose definition is held but defined after its decision time will not find it by waiting for more records.
    public func holdsDefinition(of campaignId: String, version: Int?) -> Bool {
        guard let history = campaigns[campaignId] else { return false }
        return history.definitions.contains { (version == nil || $0.version == version) && isVisible($0.position) }
    }

    private static func string(_ object: JSONObject, _ key: String) throws(PipelineError) -> String {
        guard let value = object[key] else { throw PipelineError(.missingField, at: FieldPath(key), "required") }
        guard let text = value.stringValue else {
            throw PipelineError(.invalidField, at: FieldPath(key), "expected a string, found \(value.typeDescription)")
        }
        return text
    }

    private static func timestamp(_ object: JSONObject, _ key: String) throws(PipelineError) -> Timestamp {
        let text = try string(object, key)
        do {
            return try Timestamp(rfc3339: text)
        } catch {
            throw PipelineError(.invalidField, at: FieldPath(key), "not an RFC 3339 time: \(error)")
        }
    }
}
