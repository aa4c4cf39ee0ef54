/// A JSON object whose keys keep their insertion order.
///
/// Order matters for output: ``JSONWriter`` writes keys in this order, so the same inputs always
/// give byte-identical payloads. Equality ignores order (two objects are equal when they have the
/// same keys with equal values). Lookups are linear, which is faster than hashing for the small
/// objects of a push payload.
public struct JSONObject: Sendable {
    /// One member. The members are kept in one array (one allocation per object, not two).
    struct Member: Sendable {
        var key: String
        var value: JSONValue
        /// ``JSONObject/keyTag(of:)`` of ``key``: lets a lookup skip most members without a
        /// `String` comparison.
        let keyTag: Int

        init(key: String, value: JSONValue) {
            self.init(key: key, value: value, keyTag: JSONObject.keyTag(of: key))
        }

        /// A member whose `keyTag` the caller already knows (the parser computes it from the bytes).
        init(key: String, value: JSONValue, keyTag: Int) {
            self.key = key
            self.value = value
            self.keyTag = keyTag
        }
    }

    /// The tag of a non-ASCII key (or of one longer than ``maximumTaggedKeyLength``): it says
    /// nothing, and such keys are always compared as `String`s.
    static let untaggedKey = -1
    /// Keys up to this many bytes get a tag.
    static let maximumTaggedKeyLength = 1 << 24

    /// A cheap summary of an ASCII key: its length, first and last byte. Two ASCII keys are equal
    /// exactly when their bytes are (ASCII text is already in normal form), so ASCII keys with
    /// different tags differ, and the `String` comparison is only needed when the tags match.
    /// A non-ASCII key may equal an ASCII one under `String`'s canonical equivalence (U+212A
    /// KELVIN SIGN equals "K"), so it gets ``untaggedKey``.
    static func keyTag(of key: String) -> Int {
        let utf8 = key.utf8.span
        var allBits: UInt8 = 0
        var index = 0
        while index < utf8.count {
            allBits |= utf8[index]
            index += 1
        }
        guard allBits < 0x80, utf8.count > 0 else { return utf8.isEmpty ? 0 : untaggedKey }
        return keyTag(count: utf8.count, first: utf8[0], last: utf8[utf8.count - 1])
    }

    /// The tag of an ASCII key of `count` (> 0) bytes starting with `first` and ending with `last`.
    static func keyTag(count: Int, first: UInt8, last: UInt8) -> Int {
        guard count <= maximumTaggedKeyLength else { return untaggedKey }
        return count | Int(first) << 24 | Int(last) << 32
    }

    /// Whether a member tagged `memberTag` can be equal to a key tagged `tag`; when `true`, compare
    /// the `String`s.
    static func tagsMayMatch(_ memberTag: Int, _ tag: Int) -> Bool {
        memberTag == tag || memberTag == untaggedKey || tag == untaggedKey
    }

    /// The members, in order.
    private(set) var members: [Member] = []

    /// An empty object.
    public init() {}

    /// An object with `members`, whose keys the caller (the parser) knows to be distinct.
    init(members: [Member]) {
        self.members = members
    }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }
    /// The values, parallel to ``keys``.
    public var values: [JSONValue] { members.map(\.value) }

    /// The number of members.
    public var count: Int { members.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The position of `key` in ``keys``, if present.
    public func index(of key: String) -> Int? {
        index(of: key, tag: Self.keyTag(of: key))
    }

    /// ``index(of:)`` for a key whose ``keyTag(of:)`` is `tag`.
    func index(of key: String, tag: Int) -> Int? {
        var index = 0
        while index < members.count {
            if Self.tagsMayMatch(members[index].keyTag, tag), members[index].key == key { return index }
            index += 1
        }
        return nil
    }

    /// The key and value at `index` (a position in ``keys``).
    public func member(at index: Int) -> (key: String, value: JSONValue) {
        let member = members[index]
        return (member.key, member.value)
    }

    /// The value for `key`. Setting a value replaces an existing member in place or appends a new
    /// one; setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = index(of: key) else { return nil }
            return members[index].value
        }
        set {
            let tag = Self.keyTag(of: key)
            if let index = index(of: key, tag: tag) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue, keyTag: tag))
            }
        }
    }

    /// Whether the object has a member named `key`.
    public func contains(_ key: String) -> Bool {
        index(of: key) != nil
    }

    /// Sets `key` to the string `value` when `value` is not `nil`; does nothing otherwise.
    public mutating func set(_ key: String, _ value: String?) {
        if let value { self[key] = .string(value) }
    }

    /// Reserves room for `count` members (for builders that know their size).
    public mutating func reserveCapacity(_ count: Int) {
        members.reserveCapacity(count)
    }
}

extension JSONObject: Sequence {
    /// Iterates the members in order, as `(key, value)` pairs.
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[Member]>

        public mutating func next() -> (String, JSONValue)? {
            guard let member = base.next() else { return nil }
            return (member.key, member.value)
        }
    }

    /// Iterates the members in order.
    public func makeIterator() -> Iterator {
        Iterator(base: members.makeIterator())
    }

    public var underestimatedCount: Int { members.count }
}

extension JSONObject: Equatable {
    /// Order-insensitive equality.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs {
            guard let other = rhs[key], other == value else { return false }
        }
        return true
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members.reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }
}
