/// The result of rendering one event: a notification, or a typed failure.
public enum RenderOutcome: Sendable {
    /// The event rendered.
    case rendered(RenderedNotification)
    /// The event could not be rendered; the error has the code, the event id (when it could be read)
    /// and every issue.
    case failed(PipelineError)

    /// The event id, when known.
    public var eventId: String? {
        switch self {
        case .rendered(let notification): notification.eventId
        case .failed(let error): error.eventId
        }
    }
}
