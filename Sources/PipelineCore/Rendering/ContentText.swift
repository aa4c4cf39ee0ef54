/// The text of a string field as a renderer read it (``FieldReader/text(_:required:personalize:)``): still the event's
/// own bytes when it has no escapes (with its `{{name}}` placeholders, when it has simple ones, filled as it is
/// written), else a `String`.
///
/// Written into a payload (``PayloadObject/set(_:text:)-(MemberName,_)``, ``JSONWriter/member(_:text:)``),
/// text still in the event is copied as it is: no `String` is made for it, and it is not scanned for characters to
/// escape (it has none); a personalized one gets the recipient's values written in place of its placeholders. For
/// fields a template copies into the payload without looking at them: URIs, image addresses, captions, titles.
/// ``string`` makes the `String` (personalized) when one is needed.
///
/// ```swift
/// let caption = reader.text("text")
/// items.member("txt", text: caption)  // the event's bytes, copied
/// ```
public struct ContentText: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    private enum Storage: Sendable {
        case string(String)
        /// A string node of `document` without escapes.
        case document(JSONDocument, node: Int)
        /// A string node of `document` without escapes whose placeholders are all simple
        /// (``SimpleTemplate/measure(_:_:readingFrom:absent:)``), filled from `attributes` (attributes in the read
        /// document are in `document`) when written; `byteCount` long filled.
        case personalized(JSONDocument, node: Int, attributes: AttributeSource, byteCount: Int)
    }

    private let storage: Storage

    /// Text given as a `String`.
    public init(_ string: String) {
        storage = .string(string)
    }

    /// Text given as a literal.
    public init(stringLiteral value: String) {
        storage = .string(value)
    }

    /// The string at `node` of `document`, which has no escapes.
    init(document: JSONDocument, node: Int) {
        assert(!document.isEscaped(at: node), "ContentText(document:node:) of an escaped string")
        storage = .document(document, node: node)
    }

    /// The string at `node` of `document`, which has no escapes and only simple placeholders, filled from
    /// `attributes` when it is written (or made a ``string``); `byteCount` long once filled.
    init(personalizing node: Int, of document: JSONDocument, from attributes: AttributeSource, byteCount: Int) {
        assert(!document.isEscaped(at: node), "ContentText(personalizing:) of an escaped string")
        storage = .personalized(document, node: node, attributes: attributes, byteCount: byteCount)
    }

    /// The text as a `String` (made now when the text is still in the event's bytes, and filled when it is
    /// personalized).
    public var string: String {
        switch storage {
        case .string(let string): string
        case .document(let document, let node): document.string(at: node)
        case .personalized(let document, let node, let attributes, _):
            SimpleTemplate.filledString(ofStringAt: node, of: document, from: attributes)
        }
    }

    /// The node of `document` the text is, when it is one left as it is in that document.
    func node(in document: JSONDocument) -> Int? {
        guard case .document(let own, let node) = storage, own === document else { return nil }
        return node
    }

    /// Whether the text is empty.
    public var isEmpty: Bool {
        switch storage {
        case .string(let string): string.isEmpty
        case .document(let document, let node): document.isEmptyString(at: node)
        case .personalized(_, _, _, let byteCount): byteCount == 0
        }
    }

    /// The length of the text in UTF-8 bytes (without making a `String`).
    public var utf8Count: Int {
        switch storage {
        case .string(let string): string.utf8.count
        case .document(let document, let node): document.unescapedByteCount(ofStringAt: node)
        case .personalized(_, _, _, let byteCount): byteCount
        }
    }

    public var description: String { string }

    /// Equal when the texts are (as `String`s are: canonical equivalence), wherever they are kept.
    public static func == (lhs: ContentText, rhs: ContentText) -> Bool {
        lhs.string == rhs.string
    }

    /// Hashes the text as its `String` does.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(string)
    }

    /// Appends the text as a JSON string: text still in the event's bytes as it is there (personalized as it is
    /// written).
    func write(to writer: inout JSONWriter) {
        switch storage {
        case .string(let string):
            writer.write(string: string)
        case .document(let document, let node):
            document.withUnescapedBytes(ofStringAt: node) { writer.write(unescapedStringUTF8: $0) }
        case .personalized(let document, let node, let attributes, _):
            SimpleTemplate.write(stringAt: node, of: document, from: attributes, into: &writer)
        }
    }
}

extension JSONWriter {
    /// Appends the member `key` with the text `value`, or nothing when `value` is `nil` (see ``ContentText``).
    public mutating func member(_ key: String, text value: ContentText?) {
        // `value?.` reads the text where it is: `guard let` would copy it (a reference count on its document).
        guard value != nil else { return }
        self.key(key)
        value?.write(to: &self)
    }

    /// ``member(_:text:)-(String,_)`` with a prepared name (``JSONWriter/Key``): for the members a template writes
    /// for every item or button, whose names are fixed.
    public mutating func member(_ key: Key, text value: ContentText?) {
        guard value != nil else { return }
        self.key(key)
        value?.write(to: &self)
    }
}

/// Text as ``FieldReader/documentText(_:required:personalize:)`` reads it, for a holder that keeps the document and
/// the attributes once (``StandardFields``, ``TextSource``): a string node of that document without escapes, kept as
/// its index (copying or dropping it counts no reference to the document), plain or to be personalized as it is
/// written, or a `String`.
enum DocumentText: Sendable {
    /// A string node without escapes of the holder's document.
    case node(Int)
    /// A string node without escapes of the holder's document, with only simple placeholders, filled from the holder's
    /// attributes when written; `byteCount` long once filled (see ``ContentText``).
    case personalized(node: Int, byteCount: Int)
    /// Text made while reading (escapes, Mustache) or set by the holder's user. A `String`, not a ``ContentText``:
    /// a holder keeps many of these, and a case holding only integers or a `String` is cheap to copy and to drop.
    case text(String)

    /// `text` as it is kept: a `String`, unless it is still in the bytes of `source`'s document.
    init(_ text: ContentText, in source: TextSource) {
        if let node = text.node(in: source.document) {
            self = .node(node)
        } else {
            self = .text(text.string)
        }
    }

    /// The text as ``ContentText``.
    func content(in source: TextSource) -> ContentText {
        switch self {
        case .node(let node): ContentText(document: source.document, node: node)
        case .personalized(let node, let byteCount):
            ContentText(personalizing: node, of: source.document, from: source.attributes, byteCount: byteCount)
        case .text(let text): ContentText(text)
        }
    }

    /// ``ContentText/isEmpty``.
    func isEmpty(in source: TextSource) -> Bool {
        switch self {
        case .node(let node): source.document.isEmptyString(at: node)
        case .personalized(_, let byteCount): byteCount == 0
        case .text(let text): text.isEmpty
        }
    }

    /// ``ContentText/utf8Count``.
    func utf8Count(in source: TextSource) -> Int {
        switch self {
        case .node(let node): source.document.unescapedByteCount(ofStringAt: node)
        case .personalized(_, let byteCount): byteCount
        case .text(let text): text.utf8.count
        }
    }

    /// ``ContentText/string``.
    func string(in source: TextSource) -> String {
        switch self {
        case .node(let node): source.document.string(at: node)
        case .personalized(let node, _): SimpleTemplate.filledString(ofStringAt: node, of: source.document, from: source.attributes)
        case .text(let text): text
        }
    }

    /// ``ContentText/write(to:)``: a node's bytes copied from the source's document (filled from its attributes).
    func write(to writer: inout JSONWriter, from source: TextSource) {
        switch self {
        case .node(let node): source.document.withUnescapedBytes(ofStringAt: node) { writer.write(unescapedStringUTF8: $0) }
        case .personalized(let node, _): SimpleTemplate.write(stringAt: node, of: source.document, from: source.attributes, into: &writer)
        case .text(let text): writer.write(string: text)
        }
    }
}

/// Where the ``DocumentText``s of one holder (``StandardFields``) are: the document their nodes are in, and the
/// attributes their placeholders are filled from.
struct TextSource: Sendable {
    let document: JSONDocument
    let attributes: AttributeSource
}

extension JSONWriter {
    /// ``member(_:text:)-(Key,_)`` for ``DocumentText`` of `source`.
    mutating func member(_ key: Key, text value: DocumentText?, from source: TextSource) {
        guard value != nil else { return }  // `value?.` reads the text in place (see `member(_:text:)`)
        self.key(key)
        value?.write(to: &self, from: source)
    }
}
