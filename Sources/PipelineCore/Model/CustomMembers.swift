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

    /// Who reserves a key of `custom`.
    enum Reservation: Sendable, Equatable {
        /// The template payload: `aps` and `adb_*`.
        case templatePayload
        /// FCM, for the keys of `data` (``FCMDataKey``).
        case fcm
    }

    /// The reserved keys, in order, for a payload of `platform` (when known). `aps` and `adb_*` are compared as
    /// `String`s compare (a plain ASCII key of the event by its bytes, equal exactly when they are; any other as a
    /// `String`); the keys FCM refuses by their UTF-8 bytes, as FCM compares (``FCMDataKey``).
    func reservedKeys(on platform: Platform?) -> [(key: String, reservation: Reservation)] {
        let isFCM = platform == .fcm
        switch self {
        case .object(let object):
            return object.keys.compactMap { key in Self.reservation(of: key, isFCM: isFCM).map { (key, $0) } }
        case .document(let document, let node):
            var reserved: [(key: String, reservation: Reservation)] = []
            document.forEachMember(ofObjectAt: node) { _, key, _ in
                let reservation =
                    document.isPlainASCII(at: key)
                    ? document.withUnescapedBytes(ofStringAt: key) { Self.reservation(ofASCII: $0, isFCM: isFCM) }
                    : Self.reservation(of: document.string(at: key), isFCM: isFCM)
                if let reservation { reserved.append((document.string(at: key), reservation)) }
            }
            return reserved
        }
    }

    /// The members a payload leaves out: those whose key `taken` has (the template set it) and, when `leavesOutAPS`,
    /// `aps`. Found before the payload is written, so that `taken`'s bytes can become the payload's.
    func leftOut(by taken: PayloadObject, leavesOutAPS: Bool) -> LeftOut {
        var leftOut = LeftOut()
        switch self {
        case .object(let object):
            for (position, key) in object.keys.enumerated() where Self.isLeftOut(key, by: taken, leavesOutAPS: leavesOutAPS) {
                leftOut.insert(position)
            }
        case .document(let document, let node):
            document.forEachMember(ofObjectAt: node) { position, key, _ in
                let isLeftOut =
                    if document.isPlainASCII(at: key) {
                        document.withUnescapedBytes(ofStringAt: key) { bytes in
                            (leavesOutAPS && bytes.isASCII("aps")) || taken.contains(asciiKey: bytes)
                        }
                    } else {
                        Self.isLeftOut(document.string(at: key), by: taken, leavesOutAPS: leavesOutAPS)
                    }
                if isLeftOut { leftOut.insert(position) }
            }
        }
        return leftOut
    }

    /// Writes the members as `"key":value`, separated by commas, with one before the first when `followsMembers`,
    /// except those in `leftOut`.
    func write(into writer: inout JSONWriter, followsMembers: Bool, except leftOut: LeftOut) {
        var needsComma = followsMembers
        switch self {
        case .object(let object):
            for (position, (key, value)) in object.enumerated() where !leftOut.contains(position) {
                if needsComma { writer.writeRaw(byte: UInt8(ascii: ",")) }
                needsComma = true
                writer.write(string: key)
                writer.writeRaw(byte: UInt8(ascii: ":"))
                writer.write(value)
            }
        case .document(let document, let node):
            document.forEachMember(ofObjectAt: node) { position, key, value in
                guard !leftOut.contains(position) else { return }
                if needsComma { writer.writeRaw(byte: UInt8(ascii: ",")) }
                needsComma = true
                document.writeString(at: key, into: &writer)
                writer.writeRaw(byte: UInt8(ascii: ":"))
                document.writeString(at: value, into: &writer)
            }
        }
    }

    /// Positions of members (0 for the first) a payload leaves out: the first 64 as bits, without an allocation.
    struct LeftOut {
        private var first64: UInt64 = 0
        private var beyond64: [Int] = []

        /// Whether no member is left out.
        var isEmpty: Bool { first64 == 0 && beyond64.isEmpty }

        mutating func insert(_ position: Int) {
            if position < 64 { first64 |= 1 << UInt64(position) } else { beyond64.append(position) }
        }

        func contains(_ position: Int) -> Bool {
            position < 64 ? first64 & (1 << UInt64(position)) != 0 : beyond64.contains(position)
        }
    }

    /// Whether the member `key` is left out of a payload whose template set `taken` (and `aps`, when `leavesOutAPS`).
    private static func isLeftOut(_ key: String, by taken: PayloadObject, leavesOutAPS: Bool) -> Bool {
        (leavesOutAPS && key == "aps") || taken.contains(key)
    }

    /// Who reserves `key`, if anyone (FCM only when `isFCM`).
    private static func reservation(of key: String, isFCM: Bool) -> Reservation? {
        if key == "aps" || key.hasPrefix("adb_") { return .templatePayload }
        return isFCM && FCMDataKey.isRefused(key) ? .fcm : nil
    }

    /// ``reservation(of:isFCM:)`` of a plain ASCII key's bytes.
    private static func reservation(ofASCII key: Span<UInt8>, isFCM: Bool) -> Reservation? {
        if key.isASCII("aps") || key.hasASCIIPrefix("adb_") { return .templatePayload }
        return isFCM && FCMDataKey.isRefused(utf8: key) ? .fcm : nil
    }
}
