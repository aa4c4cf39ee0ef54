/// The text of a string field as a renderer read it (``FieldReader/text(_:required:personalize:)``): still the event's
/// own bytes when reading changed nothing (no escapes, nothing personalized), else a `String`.
///
/// Written into a payload (``PayloadObject/set(_:text:)-(MemberName,_)``, ``JSONWriter/member(_:text:)``),
/// text still in the event is copied as it is: no `String` is made for it, and it is not scanned for characters to
/// escape (it has none). For fields a template copies into the payload without looking at them: URIs, image
/// addresses, captions. ``string`` makes the `String` when one is needed.
///
/// ```swift
/// let image = reader.text("image", required: true)
/// items.member("img", text: image)  // the event's bytes, copied
/// ```
public struct ContentText: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    private enum Storage: Sendable {
        case string(String)
        /// A string node of `document` without escapes.
        case document(JSONDocument, node: Int)
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

    /// The text as a `String` (made now when the text is still in the event's bytes).
    public var string: String {
        switch storage {
        case .string(let string): string
        case .document(let document, let node): document.string(at: node)
        }
    }

    /// Whether the text is empty.
    public var isEmpty: Bool {
        switch storage {
        case .string(let string): string.isEmpty
        case .document(let document, let node): document.isEmptyString(at: node)
        }
    }

    /// The length of the text in UTF-8 bytes (without making a `String`).
    public var utf8Count: Int {
        switch storage {
        case .string(let string): string.utf8.count
        case .document(let document, let node): document.unescapedByteCount(ofStringAt: node)
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

    /// Appends the text as a JSON string: text still in the event's bytes as it is there.
    func write(to writer: inout JSONWriter) {
        switch storage {
        case .string(let string):
            writer.write(string: string)
        case .document(let document, let node):
            document.withUnescapedBytes(ofStringAt: node) { writer.write(unescapedStringUTF8: $0) }
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
}

/// Text as ``FieldReader/documentText(_:required:personalize:)`` reads it, for a holder that keeps the document once
/// (``StandardFields``): a string node of that document without escapes, kept as its index (copying or dropping it
/// counts no reference to the document), or ``ContentText``.
enum DocumentText: Sendable {
    /// A string node without escapes of the holder's document.
    case node(Int)
    case text(ContentText)

    /// The text as ``ContentText``.
    func content(in document: JSONDocument) -> ContentText {
        switch self {
        case .node(let node): ContentText(document: document, node: node)
        case .text(let text): text
        }
    }

    /// ``ContentText/isEmpty``.
    func isEmpty(in document: JSONDocument) -> Bool {
        switch self {
        case .node(let node): document.isEmptyString(at: node)
        case .text(let text): text.isEmpty
        }
    }

    /// ``ContentText/utf8Count``.
    func utf8Count(in document: JSONDocument) -> Int {
        switch self {
        case .node(let node): document.unescapedByteCount(ofStringAt: node)
        case .text(let text): text.utf8Count
        }
    }

    /// ``ContentText/string``.
    func string(in document: JSONDocument) -> String {
        switch self {
        case .node(let node): document.string(at: node)
        case .text(let text): text.string
        }
    }

    /// ``ContentText/write(to:)``: a node's bytes copied from `document`.
    func write(to writer: inout JSONWriter, from document: JSONDocument) {
        switch self {
        case .node(let node): document.withUnescapedBytes(ofStringAt: node) { writer.write(unescapedStringUTF8: $0) }
        case .text(let text): text.write(to: &writer)
        }
    }
}

extension JSONWriter {
    /// ``member(_:text:)`` for ``DocumentText`` of `document`.
    mutating func member(_ key: String, text value: DocumentText?, from document: JSONDocument) {
        guard value != nil else { return }  // `value?.` reads the text in place (see `member(_:text:)`)
        self.key(key)
        value?.write(to: &self, from: document)
    }
}
