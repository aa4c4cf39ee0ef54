/// A JSON object whose keys keep their insertion order.
///
/// Order matters for output: ``JSONWriter`` writes keys in this order, so the same inputs always
/// give byte-identical payloads. Equality ignores order (two objects are equal when they have the
/// same keys with equal values). Lookups are linear, which is faster than hashing for the small
/// objects of a push payload.
public struct JSONObject: Sendable {
    /// The keys, in order.
    public private(set) var keys: [String] = []
    /// The values, parallel to ``keys``.
    public private(set) var values: [JSONValue] = []

    /// An empty object.
    public init() {}

    /// The number of members.
    public var count: Int { keys.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { keys.isEmpty }

    /// The value for `key`. Setting a value replaces an existing member in place or appends a new
    /// one; setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = keys.firstIndex(of: key) else { return nil }
            return values[index]
        }
        set {
            if let index = keys.firstIndex(of: key) {
                if let newValue {
                    values[index] = newValue
                } else {
                    keys.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    /// Whether the object has a member named `key`.
    public func contains(_ key: String) -> Bool {
        keys.contains(key)
    }

    /// Sets `key` to the string `value` when `value` is not `nil`; does nothing otherwise.
    public mutating func set(_ key: String, _ value: String?) {
        if let value { self[key] = .string(value) }
    }

    /// Appends a member without checking for an existing key; only for callers (the parser) that
    /// already know the key is new.
    mutating func appendUnchecked(_ key: String, _ value: JSONValue) {
        keys.append(key)
        values.append(value)
    }
}

extension JSONObject: Sequence {
    /// Iterates the members in order.
    public func makeIterator() -> Zip2Sequence<[String], [JSONValue]>.Iterator {
        zip(keys, values).makeIterator()
    }
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
        for (key, value) in elements { self[key] = value }
    }
}
