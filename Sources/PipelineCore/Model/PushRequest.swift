/// A `push.requested` event: one notification to render and send (see the contract).
///
/// A value type whose fields live in one shared box (as ``RenderedNotification``'s do): a request is copied into the
/// render input, the rendered notification and the pipeline's delivery bookkeeping, and each copy costs one
/// reference count. Copies never affect each other.
public struct PushRequest: Sendable {
    /// The event type this model reads.
    public static let eventType = "push.requested"

    /// The fields, as the shared box keeps them (decoding builds them with `custom` read in place).
    struct Fields: Sendable {
        var specVersion: String?
        var type: String?
        var eventId: String
        var occurredAt: Timestamp
        var campaignId: String
        var campaignVersion: Int?
        var template: String
        var recipient: Recipient
        var expiresAt: Timestamp?
        var options: DeliveryOptions
        var content: CampaignContent?
        var custom: CustomMembers
    }

    private var storage: SharedFields<Fields>

    /// `specVersion`, when present (only `"1"` is accepted).
    public var specVersion: String? {
        _read { yield storage.fields.specVersion }
        set { storage.update { $0.specVersion = newValue } }
    }
    /// `type`, when present (must be ``eventType``).
    public var type: String? {
        _read { yield storage.fields.type }
        set { storage.update { $0.type = newValue } }
    }
    /// The idempotency key; ``MessageID`` derives the output ids from it.
    public var eventId: String {
        _read { yield storage.fields.eventId }
        set { storage.update { $0.eventId = newValue } }
    }
    /// When the request was made (event time; used for expiry decisions and `apns-expiration`).
    public var occurredAt: Timestamp {
        _read { yield storage.fields.occurredAt }
        set { storage.update { $0.occurredAt = newValue } }
    }
    /// The campaign this send belongs to.
    public var campaignId: String {
        _read { yield storage.fields.campaignId }
        set { storage.update { $0.campaignId = newValue } }
    }
    /// The campaign definition version to render when ``content`` is absent.
    public var campaignVersion: Int? {
        _read { yield storage.fields.campaignVersion }
        set { storage.update { $0.campaignVersion = newValue } }
    }
    /// The template id or alias, as written in the event.
    public var template: String {
        _read { yield storage.fields.template }
        set { storage.update { $0.template = newValue } }
    }
    /// Who receives it.
    public var recipient: Recipient {
        _read { yield storage.fields.recipient }
        set { storage.update { $0.recipient = newValue } }
    }
    /// A request processed after this instant is not delivered.
    public var expiresAt: Timestamp? {
        _read { yield storage.fields.expiresAt }
        set { storage.update { $0.expiresAt = newValue } }
    }
    /// Transport options.
    public var options: DeliveryOptions {
        _read { yield storage.fields.options }
        set { storage.update { $0.options = newValue } }
    }
    /// The template's content; `nil` when the send refers to its campaign's stored content.
    public var content: CampaignContent? {
        _read { yield storage.fields.content }
        set { storage.update { $0.content = newValue } }
    }
    /// Extra string keys passed through to the payload (FCM `data`, APNs top level), in order. (An event's are read
    /// where they are in it: the object is built when asked for.)
    public var custom: JSONObject {
        get { storage.fields.custom.object }
        set { storage.update { $0.custom = .object(newValue) } }
    }

    /// ``custom`` as it is kept: the payload is written from it without building the object.
    var customMembers: CustomMembers {
        _read { yield storage.fields.custom }
    }

    /// Creates a request.
    public init(
        specVersion: String? = "1",
        type: String? = PushRequest.eventType,
        eventId: String,
        occurredAt: Timestamp,
        campaignId: String,
        campaignVersion: Int? = nil,
        template: String,
        recipient: Recipient,
        expiresAt: Timestamp? = nil,
        options: DeliveryOptions = DeliveryOptions(),
        content: CampaignContent? = nil,
        custom: JSONObject = JSONObject()
    ) {
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
                custom: .object(custom)
            )
        )
    }

    /// A request of these fields.
    init(fields: Fields) {
        storage = SharedFields(fields)
    }

    /// A copy whose content is `content` (for sends that render their campaign's stored content).
    public func with(content: CampaignContent?) -> PushRequest {
        var copy = self
        copy.content = content
        return copy
    }
}
