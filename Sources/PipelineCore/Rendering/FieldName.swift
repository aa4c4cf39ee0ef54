/// The name of a field a ``FieldReader`` looks up, prepared once: its bytes and lookup tag are kept, where a `String`'s
/// are found again at every lookup. For the fields a template reads on every render, kept in a `static let`:
///
/// ```swift
/// private enum Fields {
///     static let title = FieldName("title")
/// }
/// let title = content.string(Fields.title, required: true)
/// ```
///
/// Reading by a prepared name or by the same `String` gives the same result, issues and warnings.
public struct FieldName: Sendable {
    /// The name.
    public let name: String
    /// Whether ``utf8`` and ``tag`` are kept (a plain ASCII name, prepared; others are looked up as `String`s, which
    /// compare by canonical equivalence).
    let isPrepared: Bool
    /// The name's UTF-8 bytes, when prepared (empty otherwise).
    let utf8: [UInt8]
    /// The name's lookup tag (``JSONDocument/keyTag(_:at:count:)``), when prepared.
    let tag: UInt32

    /// Prepares `name`.
    public init(_ name: String) {
        let utf8 = Array(name.utf8)
        let tag = JSONDocument.lookupTag(of: utf8.span, isKnownASCII: false)
        self.name = name
        self.isPrepared = tag != JSONDocument.untaggedKey
        self.utf8 = isPrepared ? utf8 : []
        self.tag = tag
    }

    /// `name` as it is, not prepared: what a reader's `String`-keyed accessors look up.
    init(lookingUp name: String) {
        self.name = name
        self.isPrepared = false
        self.utf8 = []
        self.tag = 0
    }
}
