extension TemplateRegistry {
    /// The single entry point: parses, decodes and renders one event.
    ///
    /// Decodes the bytes once, resolves the template, renders for `recipient.platform`, completes
    /// the payload (token, options, custom keys), checks the size, and derives the message id.
    ///
    /// - Parameter eventBytes: one `push.requested` event as UTF-8 JSON.
    /// - Returns: ``RenderOutcome/rendered(_:)`` or ``RenderOutcome/failed(_:)``; never throws.
    public func render(eventBytes: some Sequence<UInt8>) -> RenderOutcome {
        render(eventBytes: eventBytes, scratch: RenderScratch())
    }

    /// ``render(eventBytes:)`` with the reading state kept in `scratch`: a worker rendering event after event keeps
    /// one (``RenderScratch``), and a render allocates only what it hands out.
    public func render(eventBytes: some Sequence<UInt8>, scratch: RenderScratch) -> RenderOutcome {
        // The event is read in place (``PushRequest/init(json:)`` indexes it as a ``JSONDocument``).
        outcome(scratch) { () throws(PipelineError) in try PushRequest(json: eventBytes, scratch: scratch) }
    }

    /// Decodes and renders an already parsed event (for callers that split a stream of JSON values). The tree is
    /// encoded once and read in place, as bytes are.
    public func render(event: JSONValue) -> RenderOutcome {
        outcome(RenderScratch()) { () throws(PipelineError) in try PushRequest(decoding: event) }
    }

    /// Renders the request `decode` gives, or the failure of either step.
    private func outcome(_ scratch: RenderScratch, decoding decode: () throws(PipelineError) -> PushRequest) -> RenderOutcome {
        do throws(PipelineError) {
            return .rendered(try render(try decode(), scratch: scratch))
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
        try render(request, content: content, scratch: RenderScratch())
    }

    /// ``render(_:content:)`` with the reading state kept in `scratch` (see ``RenderScratch``).
    public func render(_ request: PushRequest, content: CampaignContent? = nil, scratch: RenderScratch) throws(PipelineError) -> RenderedNotification {
        do throws(PipelineError) {
            return try renderUnlabelled(request, content: content, scratch: scratch)
        } catch {
            throw error.withEventId(request.eventId)
        }
    }

    private func renderUnlabelled(_ request: PushRequest, content: CampaignContent?, scratch: RenderScratch) throws(PipelineError) -> RenderedNotification {
        let renderer = try renderer(named: request.template)
        guard let content = content ?? request.content else {
            throw PipelineError(.missingField, at: FieldPath("content"), "required (the event has no content and none was supplied)")
        }
        let platform = request.recipient.platform
        // The reader is made in the input and read there: a reader kept aside and copied into the input would count a
        // reference each way to its diagnostics and its document.
        let input = RenderInput(
            request: request,
            platform: platform,
            content: content.reader(path: Self.contentPath, personalizer: Personalizer(attributes: request.recipient.attributeSource), scratch: scratch)
        )
        let templatePayload = try Self.payload(of: renderer, input)
        input.content.warnAboutUnreadKeys(template: renderer.templateID)
        guard !input.content.diagnostics.hasIssues else {
            var error = PipelineError(issues: input.content.diagnostics.issues)
            error.warnings = input.content.diagnostics.recordedWarnings
            throw error
        }

        let encoded = try encode(
            templatePayload,
            of: renderer.templateID,
            for: request,
            platform: platform,
            scratch: scratch,
            diagnostics: input.content.diagnostics
        )
        try checkSize(platform: platform, limitedSize: encoded.limitedSize, diagnostics: input.content.diagnostics)
        return RenderedNotification(
            request: request,
            templateID: renderer.templateID,
            platform: platform,
            messageId: MessageID.make(eventId: request.eventId, platform: platform),
            templateMembers: encoded.members,
            payloadBytes: encoded.bytes,
            headers: encoded.headers,
            warnings: input.content.diagnostics.recordedWarnings
        )
    }

    /// What `renderer` renders of `input`; when it throws, its error follows what the reader recorded before (often
    /// why it threw). Keys are not reported as unread then: the plugin stopped reading. (A function of its own: with
    /// the `do` block in the caller, each render made two more allocations, the payload's bytes copied rather than
    /// moved into the wire payload.)
    @inline(never)
    private static func payload(of renderer: any TemplateRenderer, _ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        do throws(PipelineError) {
            return try renderer.render(input)
        } catch {
            let found = error.following(input.content.diagnostics.issues, warnings: input.content.diagnostics.recordedWarnings)
            guard found.issues.isEmpty else { throw found }
            // An error with no issue would be a rejection with no reason (`validation_failed` and an empty detail).
            var said = PipelineError(
                .validationFailed,
                at: FieldPath("template"),
                "template '\(renderer.templateID)' failed without an issue (a defect of the plugin: a PipelineError names at least one)",
                eventId: found.eventId
            )
            said.warnings = found.warnings
            throw said
        }
    }

    /// The path of the content object, built once.
    private static let contentPath = FieldPath("content")

    /// The APNs members the registry owns, prepared once: looked for in every APNs payload a template renders.
    private static let apsName = PayloadObject.MemberName("aps")
    private static let categoryName = PayloadObject.MemberName("category")
    private static let mutableContentName = PayloadObject.MemberName("mutable-content")

    /// Completes the template's part into the wire payload: the token, the delivery options (FCM `android` block,
    /// APNs headers) and the event's `custom` keys where the template set no such key (a warning in `diagnostics`
    /// for each left out), and on APNs `aps.category` and `aps.mutable-content`. The payload is made in the bytes of
    /// the template's object (FCM `data`, the APNs top level), not copied into an array of its own: what goes before
    /// them is written in `scratch`, then put in front (``PayloadObject/embed(after:then:)``). Also returns where the
    /// template's members are in it, the size the platform's limit applies to (the FCM `data` object, the whole APNs
    /// payload) and the request headers.
    private func encode(
        _ templatePayload: consuming TemplatePayload,
        of templateID: String,
        for request: PushRequest,
        platform: Platform,
        scratch: RenderScratch,
        diagnostics: RenderDiagnostics
    ) throws(PipelineError) -> (bytes: [UInt8], members: RenderedNotification.TemplateMembers, limitedSize: Int, headers: RenderedNotification.Headers) {
        // An error found here keeps the warnings recorded before it (unread keys), as a plugin's own error does.
        func failure(_ error: PipelineError) -> PipelineError { error.following([], warnings: diagnostics.recordedWarnings) }
        let options = request.options
        let ttlSeconds = options.ttl.map { $0.components.seconds }
        switch consume templatePayload {
        case .fcm(var data):
            guard platform == .fcm else { throw failure(Self.otherPlatform(templateID, rendered: .fcm, for: platform)) }
            if let key = data.firstNonStringKey {
                // A defect of the plugin, whatever the event holds: said so, at the field that chose the plugin.
                throw failure(PipelineError(
                    .invalidField,
                    at: FieldPath("template"),
                    "template '\(templateID)' wrote a non-string value for the FCM data key '\(key)'; FCM data values must be strings (a defect of the plugin, not of the event)"
                ))
            }
            if let key = data.firstFCMRefusedKey {
                throw failure(PipelineError(
                    .invalidField,
                    at: FieldPath("template"),
                    "template '\(templateID)' wrote the FCM data key '\(key)', which FCM refuses (\(FCMDataKey.rule); a defect of the plugin, not of the event)"
                ))
            }
            let custom = request.customMembers
            let leftOut = custom.leftOut(by: data, leavesOutAPS: false)
            if !leftOut.isEmpty { Self.warn(leftOut, of: custom, template: templateID, onAPNs: false, in: diagnostics) }
            let followsMembers = !data.isEmpty
            var dataStart = 0
            var dataEnd = 0
            let payload = scratch.withPrefix(written: { writer in
                FCMMessage.writePrefix(
                    token: request.recipient.token,
                    collapseKey: options.collapseKey,
                    priority: options.priority,
                    ttlSeconds: ttlSeconds,
                    into: &writer
                )
                dataStart = writer.bytes.count
                writer.writeRaw(byte: UInt8(ascii: "{"))
            }) { prefix in
                data.embed(after: prefix) { writer in
                    custom.write(into: &writer, followsMembers: followsMembers, except: leftOut)
                    writer.writeRaw(byte: UInt8(ascii: "}"))
                    dataEnd = writer.bytes.count
                    writer.writeRaw(FCMMessage.suffix)
                }
            }
            return (payload.bytes, .fcm(data: payload.members), dataEnd - dataStart, .none)
        case .apns(let aps, var fields):
            guard platform == .apns else { throw failure(Self.otherPlatform(templateID, rendered: .apns, for: platform)) }
            if let collapseId = options.collapseKey {
                if collapseId.utf8.count > 64 {
                    throw failure(PipelineError(.invalidField, at: FieldPath("options", "collapseKey"), "APNs allows at most 64 bytes, found \(collapseId.utf8.count)"))
                }
                // It is sent as the `apns-collapse-id` header, where a control character other than a tab is not
                // allowed (the HTTP client would refuse every attempt, which would look like an outage until the
                // event expired).
                if let byte = collapseId.utf8.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                    throw failure(PipelineError(
                        .invalidField,
                        at: FieldPath("options", "collapseKey"),
                        "contains the control character U+\(Self.hex4(byte)), which an HTTP header (apns-collapse-id) cannot carry"
                    ))
                }
            }
            // `aps` is the registry's: a template's own top-level `aps` member is left out (rare: the template's
            // fields are then kept as they were, and the payload is made of a copy without it).
            var rendered: TemplatePayload?
            if fields.contains(Self.apsName) {
                rendered = .apns(aps: aps, fields: fields)
                fields = fields.removing("aps")
                diagnostics.record(
                    RenderWarning(
                        path: FieldPath("template"),
                        message: "template '\(templateID)' wrote a top-level 'aps' member of its own, which was left out: its aps members are the 'aps' of TemplatePayload.apns(aps:fields:) (a defect of the plugin)"
                    )
                )
            }
            let setsRegistryMembers = aps.contains(Self.categoryName) || aps.contains(Self.mutableContentName)
            if setsRegistryMembers { Self.warnAboutReplacedAPSMembers(of: aps, template: templateID, in: diagnostics) }
            let custom = request.customMembers
            let leftOut = custom.leftOut(by: fields, leavesOutAPS: true)
            if !leftOut.isEmpty { Self.warn(leftOut, of: custom, template: templateID, onAPNs: true, in: diagnostics) }
            let hasFields = !fields.isEmpty
            // Where the template's `aps` members are in the payload, when they are copied as they are (the usual case):
            // the object is then handed back to the scratch, and read back from the payload when asked for.
            var apsBytes: Range<Int>?
            let payload = scratch.withPrefix(written: { writer in
                writer.writeRaw(#"{"aps":"#)
                if setsRegistryMembers {
                    // Set again in place, where the template put them.
                    var completed = aps
                    for (key, value) in Self.registryAPSMembers { completed.set(key, value) }
                    writer.write(members: completed)
                } else {
                    writer.writeRaw(byte: UInt8(ascii: "{"))
                    let start = writer.bytes.count
                    writer.append(bytes: aps.bytes)
                    apsBytes = start..<writer.bytes.count
                    // ``registryAPSMembers``, written out.
                    writer.writeRaw(aps.isEmpty ? #""category":"AEPNotification","mutable-content":1}"# : #","category":"AEPNotification","mutable-content":1}"#)
                }
                if hasFields { writer.writeRaw(byte: UInt8(ascii: ",")) }
            }) { prefix in
                fields.embed(after: prefix) { writer in
                    custom.write(into: &writer, followsMembers: true, except: leftOut)
                    writer.writeRaw(byte: UInt8(ascii: "}"))
                }
            }
            // A ttl of 0 is APNs' own 0: one attempt, not stored (as FCM's "0s"); `occurredAt` would be a date
            // already past, which APNs reads as "store and retry until then".
            let expiration = ttlSeconds.map { $0 == 0 ? 0 : request.occurredAt.epochSeconds + $0 }
            let members: RenderedNotification.TemplateMembers
            if let rendered {
                members = .template(rendered)
            } else if let apsBytes {
                members = .apns(apsBytes: apsBytes, fields: payload.members)
                scratch.objects.handBack(aps)
            } else {
                members = .template(.apns(aps: aps, fields: payload.members.object(in: payload.bytes)))
            }
            return (
                payload.bytes, members, payload.bytes.count,
                .apns(priority: options.priority, expiration: expiration, collapseId: options.collapseKey)
            )
        }
    }

    /// The values the registry gives `aps.category` and `aps.mutable-content`, whatever a template wrote there: the
    /// SDKs render only notifications of the category `AEPNotification`, and fetch images only with mutable content.
    private static let registryAPSMembers: [(key: String, value: JSONValue)] = [("category", "AEPNotification"), ("mutable-content", 1)]

    /// Warns, in `diagnostics`, of each of `aps.category` and `aps.mutable-content` the template set to a value other
    /// than the registry's, which replaces it (rare: a template that sets the registry's own value is not warned about).
    private static func warnAboutReplacedAPSMembers(of aps: PayloadObject, template templateID: String, in diagnostics: RenderDiagnostics) {
        for (key, value) in registryAPSMembers {
            guard let written = aps[key], written != value else { continue }
            diagnostics.record(
                RenderWarning(
                    path: FieldPath("template"),
                    message: "template '\(templateID)' set aps.\(key) to \(String(decoding: written.encoded(), as: UTF8.self)), which was replaced by \(String(decoding: value.encoded(), as: UTF8.self)): the registry sets it on every APNs payload (the SDKs need it)"
                )
            )
        }
    }

    /// `byte` as four upper-case hexadecimal digits (a control character named as `U+000A`).
    private static func hex4(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// The error for a template that rendered a payload of `rendered` for an event of `platform`: a defect of the
    /// plugin, said at the field that chose it.
    private static func otherPlatform(_ templateID: String, rendered: Platform, for platform: Platform) -> PipelineError {
        PipelineError(
            .invalidField,
            at: FieldPath("template"),
            "template '\(templateID)' rendered a payload for platform \(rendered); the event's recipient.platform is \(platform) (a defect of the plugin, not of the event)"
        )
    }

    /// Warns, in `diagnostics`, of each of the event's `custom` keys left out because the template wrote a member of
    /// the same name (the template's wins). Rare: only then are the keys made `String`s.
    private static func warn(
        _ leftOut: CustomMembers.LeftOut,
        of custom: CustomMembers,
        template templateID: String,
        onAPNs: Bool,
        in diagnostics: RenderDiagnostics
    ) {
        for (position, key) in custom.object.keys.enumerated() where leftOut.contains(position) {
            // `aps` is refused when an event is decoded; a request made in code can still have it.
            let message =
                onAPNs && key == "aps"
                ? "not sent: an APNs payload's 'aps' is written by the template and the registry"
                : "not sent: template '\(templateID)' writes its own '\(key)', which is kept"
            diagnostics.record(RenderWarning(path: FieldPath("custom", key), message: message))
        }
    }

    /// `limitedSize`: the FCM `data` object's or the APNs payload's encoded size. The error keeps the warnings in
    /// `diagnostics`, as the render's other errors do.
    private func checkSize(platform: Platform, limitedSize size: Int, diagnostics: RenderDiagnostics) throws(PipelineError) {
        guard size > maximumPayloadSize else { return }
        let what =
            switch platform {
            case .fcm: "the FCM data object"
            case .apns: "the APNs payload"
            }
        throw PipelineError(.payloadTooLarge, at: FieldPath("content"), "\(what) is \(size) bytes; the limit is \(maximumPayloadSize) (never sent truncated)")
            .following([], warnings: diagnostics.recordedWarnings)
    }
}
