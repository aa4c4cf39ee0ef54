public import PipelineCore
import PushSinks

/// One event on `campaign.analytics`: what happened to one message (see the contract).
public struct AnalyticsEvent: Sendable, Hashable {
    /// The analytics event types. Every input ends in exactly one terminal type per message id.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The sink accepted the payload.
        case delivered = "push.delivered"
        /// The sink refused it for good or retries ran out.
        case failed = "push.failed"
        /// The event could not be rendered; its bytes are also on the dead-letter topic.
        case rejected = "push.rejected"
        /// Processed after `expiresAt` (cause `ttl`) or its timer ran out (cause `timer`).
        case expired = "push.expired"
        /// Its campaign was cancelled.
        case suppressed = "push.suppressed"

        /// The outcome's name without the `push.` of its type (`delivered`), as summaries and log lines count it.
        public var name: Substring { rawValue.dropFirst("push.".count) }
    }

    /// Why a message expired.
    public enum ExpiryCause: String, Sendable, Hashable, CaseIterable {
        /// Processed after the event's `expiresAt`; not sent.
        case ttl
        /// A timer notification's countdown ended.
        case timer
    }

    /// The reason codes a message of `kind` can end with: a sink's (``PushSinks/SinkFailure/Code``) for
    /// ``Kind/failed``, the render's (``PipelineCore/PipelineError/Code``) for ``Kind/rejected``, none for the other
    /// kinds. A fixed set, so a metric labelled with them cannot grow with the input.
    public static func reasonCodes(of kind: Kind) -> [String] {
        switch kind {
        case .failed: SinkFailure.Code.allCases.map(\.rawValue)
        case .rejected: PipelineError.Code.allCases.map(\.rawValue)
        case .delivered, .expired, .suppressed: []
        }
    }

    /// The type.
    public var kind: Kind
    /// Who and what the event is about.
    public var identity: MessageIdentity
    /// When this analytics event was written.
    public var occurredAt: Timestamp
    /// The sinks that accepted the payload (`kafka:push.fcm`, `apns:production,kafka:push.apns`), for
    /// ``Kind/delivered``; the sink that refused it, for ``Kind/failed``.
    public var sink: String?
    /// The reason code (`missing_field`, `invalid_token`, …) for rejected and failed messages.
    public var reasonCode: String?
    /// The reason, for people: which field and why.
    public var reasonDetail: String?
    /// The cause, for expired messages.
    public var cause: ExpiryCause?

    /// Creates an event.
    public init(
        kind: Kind,
        identity: MessageIdentity,
        occurredAt: Timestamp,
        sink: String? = nil,
        reasonCode: String? = nil,
        reasonDetail: String? = nil,
        cause: ExpiryCause? = nil
    ) {
        self.kind = kind
        self.identity = identity
        self.occurredAt = occurredAt
        self.sink = sink
        self.reasonCode = reasonCode
        self.reasonDetail = reasonDetail
        self.cause = cause
    }

    /// The bytes written to the analytics topic, keys in a fixed order (written directly, without a
    /// ``JSONObject``: one is made for every event the pipeline handles).
    public func encoded() -> [UInt8] {
        Self.encode(
            kind: kind,
            identity: identity,
            occurredAt: occurredAt,
            sink: sink,
            reasonCode: reasonCode,
            reasonDetail: reasonDetail,
            cause: cause
        )
    }

    /// The most UTF-8 bytes of a reason's detail in a record (an analytics event, a dead letter's `error.detail`).
    public static let detailLimit = 2_048

    /// `detail`, cut to at most ``detailLimit`` bytes (at a character boundary, saying how long it was): an event with
    /// thousands of problems, or one quoting a huge value, made records the cluster refused for their size.
    static func boundedDetail(_ detail: String) -> String {
        let total = detail.utf8.count
        guard total > detailLimit else { return detail }
        let marker = " … (cut: \(total) bytes in all)"
        let budget = detailLimit - marker.utf8.count
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in detail.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > budget { break }
            kept.append(scalar)
        }
        return String(kept) + marker
    }

    /// The analytics record `record` with each string value of more than ``detailLimit`` bytes cut as
    /// ``boundedDetail(_:)`` cuts a detail (saying how long it was; a detail, bounded so already, is left as it is),
    /// for a record the cluster refused for its
    /// size: only ids of hundreds of kilobytes make one that large, and the event still needs its outcome. `nil` when
    /// no text is that long (or `record` is not JSON): cutting cannot make it smaller.
    static func withLongTextsCut(_ record: [UInt8]) -> [UInt8]? {
        guard let value = try? JSONValue(parsing: record) else { return nil }
        var didCut = false
        func cut(_ value: JSONValue) -> JSONValue {
            switch value {
            case .string(let text) where text.utf8.count > detailLimit:
                didCut = true
                return .string(boundedDetail(text))
            case .object(let object):
                var result = JSONObject()
                result.reserveCapacity(object.count)
                for (key, member) in object { result[key] = cut(member) }
                return .object(result)
            case .array(let elements):
                return .array(elements.map(cut))
            default:
                return value
            }
        }
        let result = cut(value)
        return didCut ? result.encoded() : nil
    }

    /// The bytes ``encoded()`` writes for an event with these fields, for callers that hold them elsewhere: making
    /// an event only to encode it copies the identity (a reference count for each of its texts).
    static func encode(
        kind: Kind,
        identity: MessageIdentity,
        occurredAt: Timestamp,
        sink: String? = nil,
        reasonCode: String? = nil,
        reasonDetail: String? = nil,
        cause: ExpiryCause? = nil
    ) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 384)
        writer.beginObject()
        writer.member(RecordKeys.specVersion, "1")
        writer.member(RecordKeys.type, kind.rawValue)
        identity.write(to: &writer)
        // Milliseconds, as analytics readers expect (nine fraction digits trip some of them; found by review).
        writer.member(RecordKeys.occurredAt, timestamp: occurredAt.truncatedToMilliseconds)
        writer.member(RecordKeys.sink, sink)
        if let reasonCode {
            writer.key(RecordKeys.reason)
            writer.beginObject()
            writer.member(RecordKeys.code, reasonCode)
            writer.member(RecordKeys.detail, reasonDetail.map { Self.boundedDetail($0) })
            writer.endObject()
        }
        writer.member(RecordKeys.cause, cause?.rawValue)
        writer.endObject()
        return writer.bytes
    }

    /// Reads an analytics event back (for tests, replays and tools).
    ///
    /// - Throws: ``PipelineError`` when a required key is missing or has the wrong type.
    public init(json bytes: [UInt8]) throws(PipelineError) {
        let object = try JSONObject(parsing: bytes)
        guard let typeText = object["type"]?.stringValue, let kind = Kind(rawValue: typeText) else {
            throw PipelineError(.invalidField, at: FieldPath("type"), "not an analytics event type")
        }
        guard let messageId = object["messageId"]?.stringValue else {
            throw PipelineError(.missingField, at: FieldPath("messageId"), "required")
        }
        guard let occurredText = object["occurredAt"]?.stringValue, let occurredAt = try? Timestamp(rfc3339: occurredText) else {
            throw PipelineError(.invalidField, at: FieldPath("occurredAt"), "required, an RFC 3339 time")
        }
        let reason = object["reason"]?.objectValue
        self.init(
            kind: kind,
            identity: MessageIdentity(messageId: messageId, reading: object),
            occurredAt: occurredAt,
            sink: object["sink"]?.stringValue,
            reasonCode: reason?["code"]?.stringValue,
            reasonDetail: reason?["detail"]?.stringValue,
            cause: object["cause"]?.stringValue.flatMap(ExpiryCause.init(rawValue:))
        )
    }
}

/// Who and what a message is: the ids every output derived from one input carries.
public struct MessageIdentity: Sendable, Hashable {
    /// The deterministic message id (``MessageID/make(eventId:platform:)``).
    public var messageId: String
    /// The input's `eventId`, when it could be read.
    public var eventId: String?
    /// The campaign, when known.
    public var campaignId: String?
    /// The recipient id, when known.
    public var recipientId: String?
    /// The platform, when known.
    public var platform: Platform?
    /// The template as the canonical id (or as written, when it is unknown).
    public var template: String?

    /// Creates an identity.
    public init(
        messageId: String,
        eventId: String?,
        campaignId: String?,
        recipientId: String?,
        platform: Platform?,
        template: String?
    ) {
        self.messageId = messageId
        self.eventId = eventId
        self.campaignId = campaignId
        self.recipientId = recipientId
        self.platform = platform
        self.template = template
    }

    /// Writes `messageId` and the optional ids, in the order records carry them, as members of the object being
    /// written; read back with ``init(messageId:reading:)``.
    func write(to writer: inout JSONWriter) {
        writer.member(RecordKeys.messageId, messageId)
        writer.member(RecordKeys.sourceEventId, eventId)
        writer.member(RecordKeys.campaignId, campaignId)
        writer.member(RecordKeys.recipientId, recipientId)
        writer.member(RecordKeys.platform, platform?.rawValue)
        writer.member(RecordKeys.template, template)
    }

    /// The identity written into an analytics or timer record (`sourceEventId`, `campaignId`, `recipientId`,
    /// `platform`, `template`; each optional).
    init(messageId: String, reading object: JSONObject) {
        self.init(
            messageId: messageId,
            eventId: object["sourceEventId"]?.stringValue,
            campaignId: object["campaignId"]?.stringValue,
            recipientId: object["recipientId"]?.stringValue,
            platform: object["platform"]?.stringValue.flatMap(Platform.init(rawValue:)),
            template: object["template"]?.stringValue
        )
    }

    /// The identity of a decoded request (`messageId` when already known, to skip hashing again).
    init(request: PushRequest, template: String? = nil, messageId: String? = nil) {
        self.init(
            messageId: messageId ?? MessageID.make(eventId: request.eventId, platform: request.recipient.platform),
            eventId: request.eventId,
            campaignId: request.campaignId,
            recipientId: request.recipient.id,
            platform: request.recipient.platform,
            template: template ?? request.template
        )
    }

    /// The best identity that can be read from an event that failed to decode: whatever fields are
    /// readable. Without an event id, the message id is derived from the record's position, so a replay
    /// of the same record still yields the same id.
    init(undecodable value: JSONValue?, eventId: String?, sourcePosition: String) {
        let object = value?.objectValue
        let recipient = object?["recipient"]?.objectValue
        let platform = recipient?["platform"]?.stringValue.flatMap(Platform.init(rawValue:))
        let id = eventId ?? object?["eventId"]?.stringValue
        self.init(
            messageId: MessageID.make(eventId: id ?? "kafka:\(sourcePosition)", platform: platform ?? .fcm),
            eventId: id,
            campaignId: object?["campaignId"]?.stringValue,
            recipientId: recipient?["id"]?.stringValue,
            platform: platform,
            template: object?["template"]?.stringValue
        )
    }
}

/// The member names of analytics and timer records, prepared once (``JSONWriter/Key``).
enum RecordKeys {
    static let specVersion = JSONWriter.Key("specVersion")
    static let type = JSONWriter.Key("type")
    static let occurredAt = JSONWriter.Key("occurredAt")
    static let sink = JSONWriter.Key("sink")
    static let reason = JSONWriter.Key("reason")
    static let code = JSONWriter.Key("code")
    static let detail = JSONWriter.Key("detail")
    static let cause = JSONWriter.Key("cause")
    static let messageId = JSONWriter.Key("messageId")
    static let sourceEventId = JSONWriter.Key("sourceEventId")
    static let campaignId = JSONWriter.Key("campaignId")
    static let recipientId = JSONWriter.Key("recipientId")
    static let platform = JSONWriter.Key("platform")
    static let template = JSONWriter.Key("template")
    /// Timer records only.
    static let expiresAt = JSONWriter.Key("expiresAt")
}
