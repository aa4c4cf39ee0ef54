/// A successfully rendered event: the payload, its wire bytes and everything a sink needs.
public struct RenderedNotification: Sendable {
    /// The decoded request (campaign, recipient, options).
    public var request: PushRequest
    /// The canonical id of the template that rendered it (`carousel` even if the event said `car`).
    public var templateID: String
    /// The platform rendered for.
    public var platform: Platform
    /// The deterministic message id (``MessageID/make(eventId:platform:)``).
    public var messageId: String
    /// The payload value.
    public var payload: PlatformPayload
    /// The exact bytes to send: the FCM request body, or the APNs JSON payload.
    public var payloadBytes: [UInt8]
    /// The request headers to send with it (APNs); empty for FCM.
    public var headers: [Header]
    /// Non-fatal remarks (missing attributes, text guidelines, ignored fields).
    public var warnings: [RenderWarning]

    /// The event id.
    public var eventId: String { request.eventId }
    /// The device token.
    public var token: String { request.recipient.token }
}
