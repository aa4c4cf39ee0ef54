/// A template's content: its fields by meaning (`title`, `items`, `timer`, …), not by wire key.
///
/// It is kept as JSON because each template plugin defines its own fields and validates them
/// itself (through a ``FieldReader``) while rendering. Content can come from the event's `content`
/// or from elsewhere (a campaign's stored definition), see ``TemplateRegistry/render(_:content:)``.
public struct CampaignContent: Sendable, Equatable {
    /// The content object.
    public var fields: JSONObject

    /// Wraps a content object.
    public init(_ fields: JSONObject) {
        self.fields = fields
    }

    /// Parses a content object from JSON bytes.
    ///
    /// - Throws: ``PipelineError`` with code ``PipelineError/Code/invalidJSON`` if the bytes are not a
    ///   JSON object.
    public init(json bytes: some Sequence<UInt8>) throws(PipelineError) {
        self.fields = try JSONObject(parsing: bytes, at: FieldPath("content"))
    }
}
