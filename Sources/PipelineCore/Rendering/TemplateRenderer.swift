/// A template plugin: turns a request's content into a platform payload.
///
/// Only ``templateID`` and ``render(_:)`` are required; everything else has a default.
///
/// ```swift
/// public import PipelineCore
///
/// public struct BannerTemplate: TemplateRenderer {
///     public let templateID = "banner"
///     public func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
///         let title = input.content.string("title", required: true)
///         ...
///     }
/// }
/// ```
///
/// A renderer reads content through ``RenderInput/content``, which records every missing or invalid
/// field; the registry fails the event with all of them if any was recorded, so a renderer may
/// simply return its best-effort payload. It may also throw a ``PipelineError`` itself: the event then fails with
/// the issues and warnings recorded before it, followed by the error's own.
///
/// The registry completes the payload: where the template and the event's `custom` set the same key, the
/// template's is sent and a warning says the event's was left out. Of the payload's shape it checks only what would
/// fail every send (FCM `data` values are strings and have no key FCM refuses; the payload is for the event's
/// platform), failing the event at `template` as a defect of the plugin. The keys Adobe's SDKs need
/// (`adb_version`, `adb_template_type`, a title and body) are the template's to write (``StandardFields`` writes them).
public protocol TemplateRenderer: Sendable {
    /// The canonical template id (`basic`, `carousel`, …), matched against the event's `template` exactly (case and
    /// spaces count). Not empty: an empty id stops the program as the plugin is registered.
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
