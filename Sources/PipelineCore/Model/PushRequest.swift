/// A `push.requested` event: one notification to render and send (see the contract).
public struct PushRequest: Sendable {
    /// The event type this model reads.
    public static let eventType = "push.requested"

    /// `specVersion`, when present (only `"1"` is accepted).
    public var specVersion: String?
    /// `type`, when present (must be ``eventType``).
    public var type: String?
    /// The idempotency key; ``MessageID`` derives the output ids from it.
    public var eventId: String
    /// When the request was made (event time; used for expiry decisions and `apns-expiration`).
    public var occurredAt: Timestamp
    /// The campaign this send belongs to.
    public var campaignId: String
    /// The campaign definition version to render when ``content`` is absent.
    public var campaignVersion: Int?
    /// The template id or alias, as written in the event.
    public var template: String
    /// Who receives it.
    public var recipient: Recipient
    /// A request processed after this instant is not delivered.
    public var expiresAt: Timestamp?
    /// Transport options.
    public var options: DeliveryOptions
    /// The template's content; `nil` when the send refers to its campaign's stored content.
    public var content: CampaignContent?
    /// Extra string keys passed through to the payload (FCM `data`, APNs top level), in order.
    public var custom: JSONObject

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
        self.specVersion = specVersion
        self.type = type
        self.eventId = eventId
        self.occurredAt = occurredAt
        self.campaignId = campaignId
        self.campaignVersion = campaignVersion
        self.template = template
        self.recipient = recipient
        self.expiresAt = expiresAt
        self.options = options
        self.content = content
        self.custom = custom
    }

    /// A copy whose content is `content` (for sends that render their campaign's stored content).
    public func with(content: CampaignContent?) -> PushRequest {
        var copy = self
        copy.content = content
        return copy
    }
}
