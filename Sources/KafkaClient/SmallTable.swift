/// A table of a few entries, found by comparing keys one by one; past ``linearLimit`` entries, by hashing. For the
/// per-message lookups of the Kafka layer (a topic's handle by name, a handle's name): a client uses a handful of
/// topics, and comparing a pointer, or a name that is usually the very `String` the table holds, costs less than
/// hashing it for every message.
struct SmallTable<Key: Hashable, Value> {
    /// Up to this many entries are searched one by one.
    static var linearLimit: Int { 16 }

    private var keys: [Key] = []
    private var values: [Value] = []
    /// The index of each key, built once the table holds more than ``linearLimit`` entries.
    private var indexes: [Key: Int] = [:]

    /// An empty table.
    init() {}

    /// The number of entries.
    var count: Int { keys.count }

    /// Every value, in the order the entries were added.
    var allValues: [Value] { values }

    /// The value of `key`, if the table has it.
    subscript(key: Key) -> Value? {
        if keys.count <= Self.linearLimit {
            guard let index = keys.firstIndex(of: key) else { return nil }
            return values[index]
        }
        return indexes[key].map { values[$0] }
    }

    /// Adds `value` for `key`, which the table does not have yet.
    mutating func add(_ value: Value, for key: Key) {
        assert(self[key] == nil, "\(key) is in the table already")
        keys.append(key)
        values.append(value)
        if keys.count > Self.linearLimit {
            if indexes.isEmpty {
                for (index, key) in keys.enumerated() { indexes[key] = index }
            } else {
                indexes[key] = keys.count - 1
            }
        }
    }
}
