/// A template's content: its fields by meaning (`title`, `items`, `timer`, …), not by wire key.
///
/// It is kept as JSON because each template plugin defines its own fields and validates them
/// itself (through a ``FieldReader``) while rendering. Content can come from the event's `content`
/// or from elsewhere (a campaign's stored definition), see ``TemplateRegistry/render(_:content:)``.
///
/// An event's own content stays in the event's ``JSONDocument`` and is read there in place; ``fields``
/// builds the object only when asked for.
public struct CampaignContent: Sendable, Equatable {
    private enum Storage: Sendable {
        case fields(JSONObject)
        case document(JSONDocument, node: Int)
    }

    private var storage: Storage

    /// The content object.
    public var fields: JSONObject {
        get {
            switch storage {
            case .fields(let fields): fields
            case .document(let document, let node): document.object(at: node)
            }
        }
        set { storage = .fields(newValue) }
    }

    /// Wraps a content object.
    public init(_ fields: JSONObject) {
        storage = .fields(fields)
    }

    /// The object at `node` of `document` (an event's `content`), read in place.
    init(document: JSONDocument, node: Int) {
        storage = .document(document, node: node)
    }

    /// Parses a content object from JSON bytes.
    ///
    /// - Throws: ``PipelineError`` with code ``PipelineError/Code/invalidJSON`` if the bytes are not a
    ///   JSON object.
    public init(json bytes: some Sequence<UInt8>) throws(PipelineError) {
        storage = .fields(try JSONObject(parsing: bytes, at: FieldPath("content")))
    }

    /// Equal when the content objects are (member order aside), wherever they are kept.
    public static func == (lhs: CampaignContent, rhs: CampaignContent) -> Bool {
        lhs.fields == rhs.fields
    }

    /// A reader of the fields, at `path`, reporting to `diagnostics`.
    func reader(path: FieldPath, diagnostics: RenderDiagnostics) -> FieldReader {
        switch storage {
        case .fields(let fields): FieldReader(fields, path: path, diagnostics: diagnostics)
        case .document(let document, let node): FieldReader(document: document, node: node, path: path, diagnostics: diagnostics)
        }
    }
}
