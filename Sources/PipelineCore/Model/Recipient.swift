/// Who receives a notification: the event's `recipient`.
public struct Recipient: Sendable, Hashable {
    /// The recipient's id (also the Kafka key of the outputs).
    public var id: String
    /// The platform of ``token``.
    public var platform: Platform
    /// The device token.
    public var token: String
    /// Where ``attributes`` are: a dictionary, or an event's own `recipient.attributes` object, read in place
    /// (``JSONDocument``; every value checked to be a string when decoded).
    private var attributeStorage: AttributeSource

    /// Values for `{{name}}` placeholders in content strings.
    public var attributes: [String: String] {
        get { attributeStorage.dictionary(readingFrom: nil) }
        set { attributeStorage = .dictionary(newValue) }
    }

    /// Creates a recipient.
    public init(id: String, platform: Platform, token: String, attributes: [String: String] = [:]) {
        self.init(id: id, platform: platform, token: token, attributeSource: .dictionary(attributes))
    }

    /// A recipient whose attributes are read from `source`.
    init(id: String, platform: Platform, token: String, attributeSource: AttributeSource) {
        self.id = id
        self.platform = platform
        self.token = token
        self.attributeStorage = attributeSource
    }

    /// The attributes as personalization reads them (by name, without building a dictionary).
    var attributeSource: AttributeSource { attributeStorage }

    /// Equal when id, platform, token and attributes are, wherever the attributes are kept.
    public static func == (lhs: Recipient, rhs: Recipient) -> Bool {
        lhs.id == rhs.id && lhs.platform == rhs.platform && lhs.token == rhs.token && lhs.attributes == rhs.attributes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(platform)
        hasher.combine(token)
        hasher.combine(attributes)
    }
}

/// A recipient's attributes: a dictionary, or an object of strings in a ``JSONDocument`` read in place.
///
/// The values are looked up in the document of the text being personalized (`readDocument`, which every caller
/// personalizing a document's text passes: unwrapped where it is used, a borrow, where a function returning it would
/// count a reference) when the attributes are ``inReadDocument(node:)``; the other cases ignore it.
enum AttributeSource: Sendable {
    case dictionary([String: String])
    /// The object at `node` of `document`, whose values are all strings.
    case document(JSONDocument, node: Int)
    /// The object at `node` of the document whose texts are personalized (an event's own attributes, while its own
    /// content is read): no reference is held, so a copy of it (a personalizer's, a personalized text's) counts none.
    case inReadDocument(node: Int)

    /// These attributes for personalizing texts of `document`: ``inReadDocument(node:)`` when they are in it.
    func relative(to document: JSONDocument) -> AttributeSource {
        guard case .document(let own, let node) = self, own === document else { return self }
        return .inReadDocument(node: node)
    }

    /// Appends the UTF-8 text of the attribute whose name is `name` (plain ASCII bytes) to `target`; `false` when
    /// there is no such attribute. An event's own attributes are copied from its bytes, without a `String` for the
    /// name or the value.
    func appendValue(named name: Span<UInt8>, readingFrom readDocument: JSONDocument?, to target: inout [UInt8]) -> Bool {
        switch self {
        case .dictionary(let attributes):
            guard let value = attributes[String(plainASCII: name)] else { return false }
            target.append(copying: value.utf8.span)
            return true
        case .document(let document, let node):
            return Self.appendValue(named: name, of: document, node, to: &target)
        case .inReadDocument(let node):
            return Self.appendValue(named: name, of: readDocument!, node, to: &target)
        }
    }

    private static func appendValue(named name: Span<UInt8>, of document: JSONDocument, _ node: Int, to target: inout [UInt8]) -> Bool {
        guard let (_, value) = document.member(asciiKey: name, inObjectAt: node) else { return false }
        document.appendText(ofStringAt: value, to: &target)
        return true
    }

    /// The length in UTF-8 bytes of the value of the attribute whose name is `name` (plain ASCII bytes); `nil` when
    /// there is no such attribute.
    func valueByteCount(named name: Span<UInt8>, readingFrom readDocument: JSONDocument?) -> Int? {
        switch self {
        case .dictionary(let attributes):
            return attributes[String(plainASCII: name)]?.utf8.count
        case .document(let document, let node):
            return Self.valueByteCount(named: name, of: document, node)
        case .inReadDocument(let node):
            return Self.valueByteCount(named: name, of: readDocument!, node)
        }
    }

    private static func valueByteCount(named name: Span<UInt8>, of document: JSONDocument, _ node: Int) -> Int? {
        guard let (_, value) = document.member(asciiKey: name, inObjectAt: node) else { return nil }
        return document.isEscaped(at: value) ? document.string(at: value).utf8.count : document.unescapedByteCount(ofStringAt: value)
    }

    /// Writes the value of the attribute whose name is `name` (plain ASCII bytes) into `writer` as the inside of a
    /// JSON string, escaped where needed; nothing when there is no such attribute. An event's own attribute without
    /// escapes is copied from its bytes as it is (it has nothing to escape).
    func writeValue(named name: Span<UInt8>, readingFrom readDocument: JSONDocument?, into writer: inout JSONWriter) {
        switch self {
        case .dictionary(let attributes):
            guard let value = attributes[String(plainASCII: name)] else { return }
            writer.write(stringContentsUTF8: value.utf8.span)
        case .document(let document, let node):
            Self.writeValue(named: name, of: document, node, into: &writer)
        case .inReadDocument(let node):
            Self.writeValue(named: name, of: readDocument!, node, into: &writer)
        }
    }

    private static func writeValue(named name: Span<UInt8>, of document: JSONDocument, _ node: Int, into writer: inout JSONWriter) {
        guard let (_, value) = document.member(asciiKey: name, inObjectAt: node) else { return }
        guard !document.isEscaped(at: value) else {
            let text = document.string(at: value)
            return writer.write(stringContentsUTF8: text.utf8.span)
        }
        let bytes = document.bytes  // a local: a span of a class's stored property cannot outlive the property access
        writer.append(copying: bytes.span.extracting(document.unescapedRange(ofStringAt: value)))
    }

    /// All the attributes (`readDocument` as for the lookups).
    func dictionary(readingFrom readDocument: JSONDocument?) -> [String: String] {
        switch self {
        case .dictionary(let attributes): attributes
        case .document(let document, let node): Self.dictionary(of: document.object(at: node))
        case .inReadDocument(let node): Self.dictionary(of: readDocument!.object(at: node))
        }
    }

    /// The string values of `object` by name.
    static func dictionary(of object: JSONObject) -> [String: String] {
        var attributes: [String: String] = [:]
        attributes.reserveCapacity(object.count)
        for (name, value) in object { attributes[name] = value.stringValue }
        return attributes
    }
}
