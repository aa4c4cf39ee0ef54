extension PushRequest {
    /// Decodes a `push.requested` event strictly.
    ///
    /// - Required: `eventId`, `occurredAt`, `campaignId`, `template`, `recipient.id`,
    ///   `recipient.platform` (`fcm`/`apns`), `recipient.token`.
    /// - Optional: `specVersion` (`"1"`), `type` (`"push.requested"`), `campaignVersion`, `expiresAt`,
    ///   `recipient.attributes` (strings), `options`, `content` (an object), `custom` (strings).
    /// - Unknown keys are ignored at every level of the envelope (forward compatible); known keys
    ///   must have the right type. `null` counts as absent.
    ///
    /// - Throws: ``PipelineError`` listing every problem with its path and the event id (when it
    ///   could be read).
    public init(decoding value: JSONValue) throws(PipelineError) {
        guard case .object = value else {
            throw PipelineError(.invalidField, at: .root, "expected an event object, found \(value.typeDescription)")
        }
        // Read as every event is: in place, from a document (of the tree's encoding).
        let document: JSONDocument
        do throws(JSONParseError) {
            document = try JSONDocument(parsing: value.encoded(), maximumDepth: .max)
        } catch {
            preconditionFailure("the encoding of a JSON value does not parse back: \(error)")
        }
        try self.init(decoding: document)
    }

    /// Decodes a `push.requested` event read in place from its document (every event is decoded this way; a tree
    /// is encoded into a document first). The content stays in the document (see ``CampaignContent``).
    ///
    /// - Throws: ``PipelineError`` listing every problem with its path and the event id (when it could be read).
    public init(decoding document: JSONDocument) throws(PipelineError) {
        try self.init(decoding: document, scratch: RenderScratch())
    }

    /// ``init(decoding:)-(JSONDocument)`` with the reading state kept in `scratch` (for a worker decoding event after
    /// event; see ``RenderScratch``).
    public init(decoding document: JSONDocument, scratch: RenderScratch) throws(PipelineError) {
        guard document.kind(at: 0) == .object else {
            throw PipelineError(.invalidField, at: .root, "expected an event object, found \(document.value.typeDescription)")
        }
        let diagnostics = scratch.diagnostics(document: document, node: 0, path: .root)
        try self.init(reading: FieldReader(root: diagnostics), diagnostics: diagnostics)
    }

    private init(reading event: FieldReader, diagnostics: RenderDiagnostics) throws(PipelineError) {
        let fields = EnvelopeFields.shared  // one check of its lazy initialisation, not one per name
        let eventId = event.string(fields.eventId, required: true, personalize: false)
        let specVersion = event.string(fields.specVersion, personalize: false)
        if let specVersion, specVersion != "1" {
            event.addIssue(.invalidField, "specVersion", "unsupported version '\(specVersion)'; this pipeline reads \"1\"")
        }
        let type = event.string(fields.type, personalize: false)
        if let type, type != Self.eventType {
            event.addIssue(.invalidField, "type", "expected \"\(Self.eventType)\", found '\(type)'")
        }
        let occurredAt = event.timestamp(fields.occurredAt, required: true)
        let campaignId = event.string(fields.campaignId, required: true, personalize: false)
        let campaignVersion = event.integer(fields.campaignVersion, in: 0...Int.max)
        let template = event.string(fields.template, required: true, personalize: false)
        let expiresAt = event.timestamp(fields.expiresAt)
        let recipient = Self.decodeRecipient(event.object(fields.recipient, required: true))
        let options = Self.decodeOptions(event.object(fields.options))
        let custom = event.stringMembers(fields.custom) ?? .object(JSONObject())
        for (key, reservation) in custom.reservedKeys(on: recipient?.platform) {
            switch reservation {
            case .templatePayload:
                event.addIssue(.invalidField, "custom", "key '\(key)' is reserved for the template payload")
            case .fcm:
                event.addIssue(.invalidField, "custom", "key '\(key)' is reserved by FCM (\(FCMDataKey.rule))")
            }
        }
        let content = event.content(fields.content)

        guard !diagnostics.hasIssues, let eventId, let occurredAt, let campaignId, let template, let recipient
        else {
            throw PipelineError(issues: diagnostics.issues, eventId: eventId)
        }
        self.init(
            fields: Fields(
                specVersion: specVersion,
                type: type,
                eventId: eventId,
                occurredAt: occurredAt,
                campaignId: campaignId,
                campaignVersion: campaignVersion,
                template: template,
                recipient: recipient,
                expiresAt: expiresAt,
                options: options,
                content: content,
                custom: custom
            )
        )
    }

    /// Parses and decodes an event from UTF-8 JSON bytes.
    ///
    /// - Throws: ``PipelineError`` (``PipelineError/Code/invalidJSON`` with the byte offset, or the
    ///   decoding issues).
    public init(json bytes: some Sequence<UInt8>) throws(PipelineError) {
        try self.init(json: bytes, scratch: RenderScratch())
    }

    /// ``init(json:)`` with the reading state kept in `scratch` (see ``RenderScratch``).
    public init(json bytes: some Sequence<UInt8>, scratch: RenderScratch) throws(PipelineError) {
        let document: JSONDocument
        do throws(JSONParseError) {
            document = try JSONDocument(parsing: Array(bytes))
        } catch {
            throw PipelineError(.invalidJSON, at: .root, "invalid JSON: \(error)")
        }
        try self.init(decoding: document, scratch: scratch)
    }

    private static func decodeRecipient(_ reader: FieldReader?) -> Recipient? {
        guard let reader else { return nil }
        let fields = EnvelopeFields.shared  // one check of its lazy initialisation, not one per name
        let id = reader.string(fields.id, required: true, personalize: false)
        let platform = reader.choiceIndex(fields.platform, from: platformNames, required: true) { text in
            "unknown platform '\(text)'; expected fcm or apns"
        }.map { Platform.allCases[$0] }
        let token = reader.string(fields.token, required: true, personalize: false)
        let attributes = reader.attributeSource(fields.attributes)
        guard let id, let platform, let token else { return nil }
        return Recipient(id: id, platform: platform, token: token, attributeSource: attributes ?? .dictionary([:]))
    }

    /// The names of the envelope's fields, prepared once (``FieldName``); one instance, taken once per object read
    /// (``shared``), as ``StandardFields`` does.
    private final class EnvelopeFields: Sendable {
        let attributes = FieldName("attributes")
        let campaignId = FieldName("campaignId")
        let campaignVersion = FieldName("campaignVersion")
        let collapseKey = FieldName("collapseKey")
        let content = FieldName("content")
        let custom = FieldName("custom")
        let eventId = FieldName("eventId")
        let expiresAt = FieldName("expiresAt")
        let id = FieldName("id")
        let occurredAt = FieldName("occurredAt")
        let options = FieldName("options")
        let platform = FieldName("platform")
        let priority = FieldName("priority")
        let recipient = FieldName("recipient")
        let specVersion = FieldName("specVersion")
        let template = FieldName("template")
        let token = FieldName("token")
        let ttlSeconds = FieldName("ttlSeconds")
        let `type` = FieldName("type")

        static let shared = EnvelopeFields()
    }

    /// The wire values of ``Platform``, in the order of its `allCases`
    /// (for ``FieldReader/choiceIndex(_:from:required:unknown:)-(FieldName,_,_,_)``).
    private static let platformNames = Platform.allCases.map(\.rawValue)
    /// The wire values of ``DeliveryPriority``, in the order of its `allCases`.
    private static let priorityNames = DeliveryPriority.allCases.map(\.rawValue)

    private static func decodeOptions(_ reader: FieldReader?) -> DeliveryOptions {
        guard let reader else { return DeliveryOptions() }
        let fields = EnvelopeFields.shared  // one check of its lazy initialisation, not one per name
        let collapseKey = reader.string(fields.collapseKey, personalize: false)
        let priority = reader.choiceIndex(fields.priority, from: priorityNames).map { DeliveryPriority.allCases[$0] }
        let ttl = reader.integer(fields.ttlSeconds, in: 0...2_419_200).map { Duration.seconds($0) }
        return DeliveryOptions(collapseKey: collapseKey, priority: priority, ttl: ttl)
    }
}
