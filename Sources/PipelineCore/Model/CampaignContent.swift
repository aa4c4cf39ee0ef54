/// A template's content: its fields by meaning (`title`, `items`, `timer`, …), not by wire key.
///
/// It is kept as JSON because each template plugin defines its own fields and validates them
/// itself (through a ``FieldReader``) while rendering. Content can come from the event's `content`
/// or from elsewhere (a campaign's stored definition), see ``TemplateRegistry/render(_:content:)``.
///
/// An event's own content stays in the event's ``JSONDocument`` and is read there in place; ``fields``
/// builds the object only when asked for.
public struct CampaignContent: Sendable, Equatable {
    /// The document the content object is in (the event's own, or one made for content from elsewhere).
    private var document: JSONDocument
    /// The content object's node.
    private var node: Int

    /// The content object.
    public var fields: JSONObject {
        get { document.object(at: node) }
        set { self = CampaignContent(newValue) }
    }

    /// Wraps a content object (written into a document of its own once, so that every render reads it in place).
    public init(_ fields: JSONObject) {
        do throws(JSONParseError) {
            // Any depth: the object exists already, the limit is for untrusted input.
            document = try JSONDocument(parsing: JSONValue.object(fields).encoded(), maximumDepth: .max)
        } catch {
            preconditionFailure("the encoding of a JSON object does not parse back: \(error)")
        }
        node = 0
    }

    /// The object at `node` of `document` (an event's `content`), read in place.
    init(document: JSONDocument, node: Int) {
        self.document = document
        self.node = node
    }

    /// Parses a content object from JSON bytes.
    ///
    /// - Throws: ``PipelineError`` with code ``PipelineError/Code/invalidJSON`` if the bytes are not a
    ///   JSON object.
    public init(json bytes: some Sequence<UInt8>) throws(PipelineError) {
        self.init(try JSONObject(parsing: bytes, at: FieldPath("content")))
    }

    /// Equal when the content objects are (member order aside), wherever they are kept.
    public static func == (lhs: CampaignContent, rhs: CampaignContent) -> Bool {
        lhs.fields == rhs.fields
    }

    /// The reader of the fields, at `path`, for one render, its reading state in `scratch`.
    func reader(path: FieldPath, personalizer: Personalizer?, scratch: RenderScratch) -> FieldReader {
        // Attributes in this content's own document (an event's, read with its own content) are kept by node only.
        let personalizer = personalizer.map { Personalizer(attributes: $0.attributes.relative(to: document)) }
        return FieldReader(root: scratch.diagnostics(document: document, node: node, path: path, personalizer: personalizer))
    }
}
