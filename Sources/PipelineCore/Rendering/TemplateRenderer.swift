/// A template plugin: turns a request's content into a platform payload.
///
/// Only ``templateID`` and ``render(_:)`` are required; everything else has a default.
///
/// ```swift
/// struct BannerTemplate: TemplateRenderer {
///     let templateID = "banner"
///     func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
///         let title = input.content.string("title", required: true)
///         ...
///     }
/// }
/// ```
///
/// A renderer reads content through ``RenderInput/content``, which records every missing or invalid
/// field; the registry fails the event with all of them if any was recorded, so a renderer may
/// simply return its best-effort payload. It may also throw a ``PipelineError`` itself.
public protocol TemplateRenderer: Sendable {
    /// The canonical template id (`basic`, `carousel`, …), matched against the event's `template`.
    var templateID: String { get }
    /// Other names the event's `template` may use for this template (`car` for `carousel`).
    var aliases: [String] { get }
    /// One sentence describing the template, for the `templates` command.
    var summary: String { get }
    /// The content fields it reads, for the `templates` command.
    var fields: [TemplateField] { get }

    /// Renders `input.content` for `input.platform`.
    ///
    /// - Throws: ``PipelineError`` when the content cannot be rendered.
    func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload
}

extension TemplateRenderer {
    /// No aliases.
    public var aliases: [String] { [] }
    /// No description.
    public var summary: String { "" }
    /// No field list.
    public var fields: [TemplateField] { [] }
}
