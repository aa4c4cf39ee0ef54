/// A successfully rendered event: the payload, its wire bytes and everything a sink needs.
///
/// A value type whose fields live in one shared box: a notification goes from the renderer through the pipeline to
/// every sink, and a copy costs one reference count instead of one per string, array and payload value inside it.
/// Setting a field gives the changed value a box of its own, so copies never affect each other. Reading a field
/// borrows it from the box (`_read`): `notification.request.recipient.id` copies the id, not the whole request. From
/// another module that chain copies the whole recipient to read its id; ``recipientId``, ``recipientPlatform`` and
/// ``token`` read them in place.
public struct RenderedNotification: Sendable {
    private struct Fields: Sendable {
        var request: PushRequest
        var templateID: String
        var platform: Platform
        var messageId: String
        var templateMembers: TemplateMembers
        var payloadBytes: [UInt8]
        var headers: Headers
        var warnings: [RenderWarning]
        var judgedEarlierBy: Duration = .zero
    }

    /// What the template rendered, as it is kept: where its members are in the payload's bytes, which were made from
    /// its object's (``PayloadObject/embed(after:then:)``); objects of their own once those bytes are replaced.
    enum TemplateMembers: Sendable {
        /// FCM `data`, in ``payloadBytes``.
        case fcm(data: PayloadObject.Embedded)
        /// The APNs `aps` members, where they are in ``payloadBytes`` (the template's, copied as they were, without
        /// the registry's `category` and `mutable-content`), and the top-level members in ``payloadBytes``.
        case apns(apsBytes: Range<Int>, fields: PayloadObject.Embedded)
        /// The template's payload, with bytes of its own.
        case template(TemplatePayload)

        /// The template's payload; objects embedded in `payload` are copied out of it.
        func templatePayload(in payload: [UInt8]) -> TemplatePayload {
            switch self {
            case .fcm(let data): .fcm(data: data.object(in: payload))
            case .apns(let aps, let fields): .apns(aps: PayloadObject(members: payload[aps]), fields: fields.object(in: payload))
            case .template(let templatePayload): templatePayload
            }
        }
    }

    /// The request headers, as they are kept: an APNs notification's are made from its options when asked for (no
    /// array is built for every notification).
    enum Headers: Sendable {
        /// None (FCM).
        case none
        /// ``APNsNotification/headers(priority:expiration:collapseId:)`` of these.
        case apns(priority: DeliveryPriority?, expiration: Int64?, collapseId: String?)
        /// Set by the notification's user.
        case list([Header])
    }

    private var storage: SharedFields<Fields>

    init(
        request: PushRequest,
        templateID: String,
        platform: Platform,
        messageId: String,
        templateMembers: TemplateMembers,
        payloadBytes: [UInt8],
        headers: Headers,
        warnings: [RenderWarning]
    ) {
        storage = SharedFields(
            Fields(
                request: request, templateID: templateID, platform: platform, messageId: messageId,
                templateMembers: templateMembers, payloadBytes: payloadBytes, headers: headers, warnings: warnings
            )
        )
    }

    /// The decoded request (campaign, recipient, options).
    public var request: PushRequest {
        _read { yield storage.fields.request }
        set { storage.update { $0.request = newValue } }
    }
    /// The canonical id of the template that rendered it (`carousel` even if the event said `car`).
    public var templateID: String {
        _read { yield storage.fields.templateID }
        set { storage.update { $0.templateID = newValue } }
    }
    /// The platform rendered for.
    public var platform: Platform {
        _read { yield storage.fields.platform }
        set { storage.update { $0.platform = newValue } }
    }
    /// The deterministic message id (``MessageID/make(eventId:platform:)``).
    public var messageId: String {
        _read { yield storage.fields.messageId }
        set { storage.update { $0.messageId = newValue } }
    }
    /// The payload as a value, decoded from ``payloadBytes`` and ``headers`` on each access (for inspection; the
    /// bytes are what is sent).
    public var payload: PlatformPayload {
        PlatformPayload(decoding: payloadBytes, platform: platform, token: token, headers: headers)
    }
    /// What the template rendered, before the registry completed it into ``payloadBytes`` (copied out of those
    /// bytes on each access, for inspection).
    public var templatePayload: TemplatePayload {
        storage.fields.templateMembers.templatePayload(in: storage.fields.payloadBytes)
    }
    /// The exact bytes to send: the FCM request body, or the APNs JSON payload.
    public var payloadBytes: [UInt8] {
        _read { yield storage.fields.payloadBytes }
        set {
            storage.update { fields in
                // The template's members are read from the bytes being replaced: copied out of them first.
                fields.templateMembers = .template(fields.templateMembers.templatePayload(in: fields.payloadBytes))
                fields.payloadBytes = newValue
            }
        }
    }
    /// The request headers to send with it (APNs); empty for FCM.
    public var headers: [Header] {
        get {
            var headers: [Header] = []
            forEachHeader { name, value in headers.append(Header(name, value)) }
            return headers
        }
        set { storage.update { $0.headers = .list(newValue) } }
    }

    /// Calls `body` with the name and value of each of ``headers``, in order, without building the array.
    public func forEachHeader(_ body: (_ name: String, _ value: String) -> Void) {
        switch storage.fields.headers {
        case .none:
            return
        case .apns(let priority, let expiration, let collapseId):
            APNsNotification.forEachHeader(priority: priority, expiration: expiration, collapseId: collapseId, body)
        case .list(let headers):
            for header in headers { body(header.name, header.value) }
        }
    }
    /// Non-fatal remarks (missing attributes, text guidelines, ignored fields).
    public var warnings: [RenderWarning] {
        _read { yield storage.fields.warnings }
        set { storage.update { $0.warnings = newValue } }
    }

    /// How long before it was read this time the event was judged: an event read again (after a crash or a
    /// rebalance) is judged at the instant of its first reading. A sink judges its `expiresAt` as at that instant,
    /// plus the time since this reading began, so that a send its first reading delivered does not end
    /// `push.expired` the next time it is read. Zero for an event judged as it is read.
    public var judgedEarlierBy: Duration {
        get { storage.fields.judgedEarlierBy }
        set { storage.update { $0.judgedEarlierBy = newValue } }
    }

    /// The event id.
    public var eventId: String { request.eventId }
    /// The device token.
    public var token: String {
        _read { yield storage.fields.request.recipient.token }
    }

    /// The recipient's id, read where the request keeps it (another module's `notification.request.recipient.id`
    /// copies the whole recipient first, a reference count each way for each of its fields).
    public var recipientId: String {
        _read { yield storage.fields.request.recipient.id }
    }

    /// The recipient's platform (the one rendered for, ``platform``, unless that was changed since), read in place.
    public var recipientPlatform: Platform {
        storage.fields.request.recipient.platform
    }

    /// The member `key` of the object the template fills, as sent: FCM `message.data`, or the APNs payload's top
    /// level (other than `aps`). That is the template's member, or else the event's `custom` key of that name.
    public func payloadMember(_ key: String) -> JSONValue? {
        let payload = storage.fields.payloadBytes
        switch storage.fields.templateMembers {
        case .fcm(let data):
            return data.member(key, in: payload) ?? request.customMembers[key]
        case .apns(_, let fields):
            guard key != "aps" else { return nil }
            return fields.member(key, in: payload) ?? request.customMembers[key]
        case .template(.fcm(let data)):
            return data[key] ?? request.customMembers[key]
        case .template(.apns(_, let fields)):
            guard key != "aps" else { return nil }
            return fields[key] ?? request.customMembers[key]
        }
    }
}
