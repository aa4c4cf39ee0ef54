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

        init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
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
        members.firstIndex { $0.key == key }
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
            if let index = index(of: key) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
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

    /// Appends `key` with the string `value` when `value` is not `nil`, without looking for an
    /// existing `key`: for builders whose keys are distinct literals (the lookup ``set(_:_:)`` does
    /// costs a string comparison per member already present).
    mutating func appendNew(_ key: String, _ value: String?) {
        assert(!contains(key), "appendNew(\(key)) on an object that has it")
        if let value { members.append(Member(key: key, value: .string(value))) }
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
