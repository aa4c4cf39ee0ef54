/// An event's `custom` object (strings by key, in order): read in place from the event's document, or given as a
/// ``JSONObject``. Decoding checks that every value is a string and keeps only the object's node, so an event's custom
/// keys cost nothing until its payload is written, where they are copied from the event's bytes.
enum CustomMembers: Sendable {
    case object(JSONObject)
    /// The object at `node` of `document`, whose values are all strings.
    case document(JSONDocument, node: Int)

    /// The members as a ``JSONObject``.
    var object: JSONObject {
        switch self {
        case .object(let object): object
        case .document(let document, let node): document.object(at: node)
        }
    }

    /// The value of `key`.
    subscript(key: String) -> JSONValue? {
        switch self {
        case .object(let object): object[key]
        case .document(let document, let node): document.member(key, inObjectAt: node).map { document.value(at: $0.value) }
        }
    }

    /// The keys that `isReserved` is true of, in order. The keys are compared as `String`s are: a plain ASCII key of
    /// the event is tested on its bytes (`isReservedASCII`), any other as a `String`.
    func keys(where isReserved: (String) -> Bool, isReservedASCII: (Span<UInt8>) -> Bool) -> [String] {
        switch self {
        case .object(let object):
            return object.keys.filter(isReserved)
        case .document(let document, let node):
            var reserved: [String] = []
            document.forEachMember(ofObjectAt: node) { _, key, _ in
                if document.isPlainASCII(at: key) {
                    if document.withUnescapedBytes(ofStringAt: key, isReservedASCII) { reserved.append(document.string(at: key)) }
                } else if isReserved(document.string(at: key)) {
                    reserved.append(document.string(at: key))
                }
            }
            return reserved
        }
    }

    /// Writes the members whose key is free as `"key":value`, separated by commas, with one before the first when
    /// `followsMembers` (the object being written has members already). A plain ASCII key of the event is tested on
    /// its bytes (`isFreeASCII`), any other as a `String` (`isFree`).
    func write(
        into writer: inout JSONWriter,
        followsMembers: Bool,
        isFree: (String) -> Bool,
        isFreeASCII: (Span<UInt8>) -> Bool
    ) {
        var needsComma = followsMembers
        switch self {
        case .object(let object):
            for (key, value) in object where isFree(key) {
                if needsComma { writer.writeRaw(byte: UInt8(ascii: ",")) }
                needsComma = true
                writer.write(string: key)
                writer.writeRaw(byte: UInt8(ascii: ":"))
                writer.write(value)
            }
        case .document(let document, let node):
            document.forEachMember(ofObjectAt: node) { _, key, value in
                let isKeyFree =
                    document.isPlainASCII(at: key)
                    ? document.withUnescapedBytes(ofStringAt: key, isFreeASCII) : isFree(document.string(at: key))
                guard isKeyFree else { return }
                if needsComma { writer.writeRaw(byte: UInt8(ascii: ",")) }
                needsComma = true
                document.writeString(at: key, into: &writer)
                writer.writeRaw(byte: UInt8(ascii: ":"))
                document.writeString(at: value, into: &writer)
            }
        }
    }
}
