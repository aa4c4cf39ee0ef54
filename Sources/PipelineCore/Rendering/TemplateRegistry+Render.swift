extension TemplateRegistry {
    /// The single entry point: parses, decodes and renders one event.
    ///
    /// Decodes the bytes once, resolves the template, renders for `recipient.platform`, completes
    /// the payload (token, options, custom keys), checks the size, and derives the message id.
    ///
    /// - Parameter eventBytes: one `push.requested` event as UTF-8 JSON.
    /// - Returns: ``RenderOutcome/rendered(_:)`` or ``RenderOutcome/failed(_:)``; never throws.
    public func render(eventBytes: some Sequence<UInt8>) -> RenderOutcome {
        // The event is read in place (``PushRequest/init(json:)`` indexes it as a ``JSONDocument``).
        outcome { () throws(PipelineError) in try PushRequest(json: eventBytes) }
    }

    /// Decodes and renders an already parsed event (for callers that split a stream of JSON values).
    public func render(event: JSONValue) -> RenderOutcome {
        outcome { () throws(PipelineError) in try PushRequest(decoding: event) }
    }

    /// Renders the request `decode` gives, or the failure of either step.
    private func outcome(decoding decode: () throws(PipelineError) -> PushRequest) -> RenderOutcome {
        do throws(PipelineError) {
            return .rendered(try render(try decode()))
        } catch {
            return .failed(error)
        }
    }

    /// Renders a decoded request.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - content: the content to render; `nil` uses `request.content` (a send that refers to its
    ///     campaign passes the campaign's stored content here).
    /// - Throws: ``PipelineError`` carrying the event id and every issue found.
    public func render(_ request: PushRequest, content: CampaignContent? = nil) throws(PipelineError) -> RenderedNotification {
        do throws(PipelineError) {
            return try renderUnlabelled(request, content: content)
        } catch {
            throw error.withEventId(request.eventId)
        }
    }

    private func renderUnlabelled(_ request: PushRequest, content: CampaignContent?) throws(PipelineError) -> RenderedNotification {
        let renderer = try renderer(named: request.template)
        guard let content = content ?? request.content else {
            throw PipelineError(.missingField, at: FieldPath("content"), "required (the event has no content and none was supplied)")
        }
        let platform = request.recipient.platform
        let diagnostics = RenderDiagnostics(personalizer: Personalizer(attributes: request.recipient.attributes))
        let reader = content.reader(path: Self.contentPath, diagnostics: diagnostics)
        let templatePayload = try renderer.render(RenderInput(request: request, platform: platform, content: reader))
        reader.warnAboutUnreadKeys(template: renderer.templateID)
        guard diagnostics.issues.isEmpty else { throw PipelineError(issues: diagnostics.issues) }

        let payload = try assemble(templatePayload, for: request, platform: platform)
        let (bytes, limitedSize) = payload.encodedWithLimitedSize()
        try checkSize(of: payload, limitedSize: limitedSize)
        return RenderedNotification(
            request: request,
            templateID: renderer.templateID,
            platform: platform,
            messageId: MessageID.make(eventId: request.eventId, platform: platform),
            payload: payload,
            payloadBytes: bytes,
            headers: payload.headers,
            warnings: diagnostics.warnings
        )
    }

    /// The path of the content object, built once.
    private static let contentPath = FieldPath("content")

    private func assemble(_ templatePayload: TemplatePayload, for request: PushRequest, platform: Platform) throws(PipelineError) -> PlatformPayload {
        let options = request.options
        let ttlSeconds = options.ttl.map { $0.components.seconds }
        switch (templatePayload, platform) {
        case (.fcm(var data), .fcm):
            for (key, value) in data where value.stringValue == nil {
                throw PipelineError(.invalidField, at: FieldPath("content"), "template produced a non-string FCM data value for '\(key)'")
            }
            for (key, value) in request.custom where !data.contains(key) { data[key] = value }
            return .fcm(FCMMessage(token: request.recipient.token, collapseKey: options.collapseKey, priority: options.priority, ttlSeconds: ttlSeconds, data: data))
        case (.apns(var aps, let fields), .apns):
            aps["category"] = "AEPNotification"
            aps["mutable-content"] = 1
            var payload = JSONObject()
            payload.reserveCapacity(1 + fields.count + request.custom.count)
            payload["aps"] = .object(aps)
            for (key, value) in fields where key != "aps" { payload[key] = value }
            for (key, value) in request.custom where !payload.contains(key) { payload[key] = value }
            if let collapseId = options.collapseKey, collapseId.utf8.count > 64 {
                throw PipelineError(.invalidField, at: FieldPath("options", "collapseKey"), "APNs allows at most 64 bytes, found \(collapseId.utf8.count)")
            }
            let expiration = ttlSeconds.map { request.occurredAt.epochSeconds + $0 }
            return .apns(APNsNotification(token: request.recipient.token, payload: payload, priority: options.priority, expiration: expiration, collapseId: options.collapseKey))
        default:
            throw PipelineError(.invalidField, at: FieldPath("recipient", "platform"), "template '\(request.template)' rendered a payload for another platform than \(platform)")
        }
    }

    /// `limitedSize`: the FCM `data` object's or the APNs payload's encoded size.
    private func checkSize(of payload: PlatformPayload, limitedSize size: Int) throws(PipelineError) {
        guard size > maximumPayloadSize else { return }
        let what =
            switch payload {
            case .fcm: "the FCM data object"
            case .apns: "the APNs payload"
            }
        throw PipelineError(.payloadTooLarge, at: FieldPath("content"), "\(what) is \(size) bytes; the limit is \(maximumPayloadSize) (never sent truncated)")
    }
}
