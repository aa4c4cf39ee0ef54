/// What a ``TemplateRenderer`` renders from: the decoded request, the platform to render for, and
/// a reader over the content fields.
public struct RenderInput {
    /// The decoded event (its `content` may come from elsewhere; read ``content`` instead).
    public let request: PushRequest
    /// The platform to render for (the request's `recipient.platform`).
    public let platform: Platform
    /// The content fields, with type checks, personalization and issue collection.
    public let content: FieldReader

    /// Created by ``TemplateRegistry`` for each render.
    init(request: PushRequest, platform: Platform, content: FieldReader) {
        self.request = request
        self.platform = platform
        self.content = content
    }
}
