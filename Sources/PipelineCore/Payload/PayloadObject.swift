/// One JSON object of a payload (FCM `data`, APNs `aps` or the APNs top level), written as bytes as its members are
/// set: no tree of values is built, copied and freed per event.
///
/// Members keep the order they were first set in, and setting a key that is already there replaces its value in
/// place, as ``JSONObject`` does; so the same calls always give the same bytes. Keys are compared as `String`s are
/// (canonical equivalence), as ``JSONObject`` compares them.
///
/// ```swift
/// var data = PayloadObject()
/// data.set("adb_title", title)                               // nothing is written when the value is nil
/// data.set("adb_act", JSONValue.array(buttons).jsonString)  // FCM data holds strings: nested JSON as text
///
/// var aps = PayloadObject()
/// aps.set("badge", badge)                                    // an Int
/// aps.set("alert", object: alert)                            // a nested PayloadObject
/// ```
///
/// Equality is the equality of ``object``: member order aside.
public struct PayloadObject: Sendable, Equatable {
    /// Where one member is in ``bytes``.
    struct Member: Sendable {
        /// ``JSONObject/keyTag(of:)`` of the key.
        var tag: Int
        /// The offset of the key's opening quote.
        var keyStart: Int32
        /// The offset of the value's first byte.
        var valueStart: Int32
        /// The offset after the value.
        var end: Int32
        /// Whether the key is written as its own bytes (ASCII without escapes): then it is compared byte by byte.
        var keyIsVerbatim: Bool
        /// Whether the value is a string (FCM `data` allows nothing else).
        var isString: Bool
    }

    /// The members, `"key":value` separated by commas, without the braces.
    private var writer: JSONWriter
    /// The members' places, in order.
    private(set) var members: [Member]

    /// An empty object.
    public init() {
        self.init(reservingBytes: 256, members: 8)
    }

    /// An empty object with room for about `bytes` bytes and `members` members before it grows.
    public init(reservingBytes bytes: Int, members: Int) {
        writer = JSONWriter(reservingCapacity: bytes)
        self.members = []
        self.members.reserveCapacity(members)
    }

    /// An object of the members written in `bytes` (`"key":value` pairs separated by commas, as ``bytes`` has them),
    /// in their order.
    init(members bytes: ArraySlice<UInt8>) {
        var text: [UInt8] = [UInt8(ascii: "{")]
        text.append(contentsOf: bytes)
        text.append(UInt8(ascii: "}"))
        do throws(JSONParseError) {
            guard case .object(let object) = try JSONValue(parsing: text) else { preconditionFailure("members that are not an object's") }
            self.init(object)
        } catch {
            preconditionFailure("members written by an object do not parse at offset \(error.offset): \(error)")
        }
    }

    /// Empties the object, keeping the memory of its bytes and members (``PayloadObjectPool``).
    mutating func removeAll() {
        writer.removeAll()
        members.removeAll(keepingCapacity: true)
    }

    /// An object with the members of `object`, in its order.
    public init(_ object: JSONObject) {
        self.init(reservingBytes: 64 * max(object.count, 1), members: object.count)
        for (key, value) in object { set(key, value) }
    }

    /// The members' bytes: `"key":value` pairs separated by commas, without the surrounding braces.
    var bytes: [UInt8] { writer.bytes }

    /// The number of members.
    public var count: Int { members.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// Whether the object has a member named `key`.
    public func contains(_ key: String) -> Bool {
        index(of: key, tag: JSONObject.keyTag(of: key)) != nil
    }

    /// The value of `key`, read back from the bytes (for inspection; templates know what they set).
    public subscript(key: String) -> JSONValue? {
        guard let index = index(of: key, tag: JSONObject.keyTag(of: key)) else { return nil }
        return value(at: index)
    }

    /// The members as a ``JSONObject``, in order.
    public var object: JSONObject {
        var object = JSONObject()
        object.reserveCapacity(members.count)
        for index in members.indices { object[key(at: index)] = value(at: index) }
        return object
    }

    /// The key of the first member whose value is not a string, if any.
    var firstNonStringKey: String? {
        members.firstIndex { !$0.isString }.map { key(at: $0) }
    }

    /// The key of the first member FCM refuses in `data` (``FCMDataKey``), if any. A key written as its own bytes is
    /// looked at only when its first byte is one a refused key begins with.
    var firstFCMRefusedKey: String? {
        let text = writer.bytes.span
        for index in members.indices {
            let member = members[index]
            if member.keyIsVerbatim {
                // `"key":value`: the key's bytes are between its quotes, which end two bytes before the value.
                let start = Int(member.keyStart) &+ 1
                let first = text[start]
                guard first == UInt8(ascii: "f") || first == UInt8(ascii: "m") || first == UInt8(ascii: "g") else { continue }
                if FCMDataKey.isRefused(utf8: text.extracting(start..<(Int(member.valueStart) &- 2))) { return key(at: index) }
            } else if FCMDataKey.isRefused(key(at: index)) {
                return key(at: index)
            }
        }
        return nil
    }

    /// Equal when the objects are, member order aside.
    public static func == (lhs: PayloadObject, rhs: PayloadObject) -> Bool {
        lhs.object == rhs.object
    }

    // MARK: - Setting members

    /// Sets `key` to the string `value`; does nothing when `value` is `nil`.
    public mutating func set(_ key: String, _ value: String?) {
        guard let value else { return }
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: true) { $0.write(string: value) }
    }

    /// Sets the member `name` to the string `value`; does nothing when `value` is `nil`. The same as
    /// ``set(_:_:)-(String,String?)`` with a name whose text is written once, not per payload.
    public mutating func set(_ name: MemberName, _ value: String?) {
        guard let value else { return }
        setMember(name.text, tag: name.tag, name: name, isString: true) { $0.write(string: value) }
    }

    /// Sets `key` to the number `value`; does nothing when `value` is `nil`.
    public mutating func set(_ key: String, _ value: Int?) {
        guard let value else { return }
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: false) { $0.write(.int(value)) }
    }

    /// ``set(_:_:)-(String,Int?)`` with a prepared name.
    public mutating func set(_ name: MemberName, _ value: Int?) {
        guard let value else { return }
        setMember(name.text, tag: name.tag, name: name, isString: false) { $0.write(.int(value)) }
    }

    /// Sets `key` to `value`, any JSON; does nothing when `value` is `nil` (a JSON `null` is ``JSONValue/null``).
    public mutating func set(_ key: String, _ value: JSONValue?) {
        guard let value else { return }
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: value.stringValue != nil) { $0.write(value) }
    }

    /// ``set(_:_:)-(String,JSONValue?)`` with a prepared name.
    public mutating func set(_ name: MemberName, _ value: JSONValue?) {
        guard let value else { return }
        setMember(name.text, tag: name.tag, name: name, isString: value.stringValue != nil) { $0.write(value) }
    }

    /// Sets `key` to the object `value` (such as `aps.alert`).
    public mutating func set(_ key: String, object value: PayloadObject) {
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: false) { $0.write(members: value) }
    }

    /// ``set(_:object:)-(String,_)`` with a prepared name.
    public mutating func set(_ name: MemberName, object value: PayloadObject) {
        setMember(name.text, tag: name.tag, name: name, isString: false) { $0.write(members: value) }
    }

    /// Sets `key` to the JSON value `json` wrote (one complete value: an array or object streamed with
    /// ``JSONWriter/beginArray()`` or ``JSONWriter/beginObject()``, or a scalar), inserted as it was written. For
    /// nested values built in place instead of as a ``JSONValue`` tree (APNs `adb_items`).
    public mutating func set(_ key: String, json: JSONWriter) {
        assert(Self.isOneValue(json), "set(\(key), json:) with bytes that are not one JSON value")
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: json.bytes.first == UInt8(ascii: "\"")) {
            $0.append(bytes: json.bytes)
        }
    }

    /// ``set(_:json:)-(String,_)`` with a prepared name.
    public mutating func set(_ name: MemberName, json: JSONWriter) {
        assert(Self.isOneValue(json), "set(\(name.text), json:) with bytes that are not one JSON value")
        setMember(name.text, tag: name.tag, name: name, isString: json.bytes.first == UInt8(ascii: "\"")) {
            $0.append(bytes: json.bytes)
        }
    }

    /// Sets `key` to a string holding the JSON text `json` wrote: FCM `data` values are strings, so a nested array
    /// or object goes there as its text (FCM `adb_items`, `adb_act`). The same as setting the text as a `String`,
    /// without making one.
    public mutating func set(_ key: String, jsonText json: JSONWriter) {
        assert(Self.isOneValue(json), "set(\(key), jsonText:) with bytes that are not one JSON value")
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: true) { $0.write(jsonTextAsString: json.bytes.span) }
    }

    /// ``set(_:jsonText:)-(String,_)`` with a prepared name.
    public mutating func set(_ name: MemberName, jsonText json: JSONWriter) {
        assert(Self.isOneValue(json), "set(\(name.text), jsonText:) with bytes that are not one JSON value")
        setMember(name.text, tag: name.tag, name: name, isString: true) { $0.write(jsonTextAsString: json.bytes.span) }
    }

    /// Sets `name` to the JSON value `write` writes straight into this object's bytes: no writer of its own, no copy.
    ///
    /// ```swift
    /// fields.set(Names.adbItems, jsonWrittenBy: { items in
    ///     items.beginArray()
    ///     for item in list { items.nextElement(); items.write(string: item) }
    ///     items.endArray()
    ///     return true
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - name: the member's name. When the object has it already, `write` writes into a writer of its own and the
    ///     value replaces the old one in place (as every setter does), or leaves it as it was if `write` declines.
    ///   - write: writes exactly one JSON value (streamed, as for ``set(_:json:)-(MemberName,_)``, or with
    ///     ``JSONWriter/write(_:)``) and returns `true`; or returns `false` to leave the member out, and what it wrote
    ///     is taken back. The writer also holds the object's other members, before the value: read none of its bytes.
    public mutating func set(_ name: MemberName, jsonWrittenBy write: (inout JSONWriter) -> Bool) {
        setWrittenMember(name, asText: false, write)
    }

    /// ``set(_:jsonWrittenBy:)-(MemberName,_)`` by the name's text.
    public mutating func set(_ key: String, jsonWrittenBy write: (inout JSONWriter) -> Bool) {
        setWrittenMember(MemberName(key), asText: false, write)
    }

    /// Sets `name` to a string holding the JSON text `write` writes: the bytes of ``set(_:jsonText:)-(MemberName,_)``,
    /// without a writer of its own (the text is written into this object's bytes and escaped where it is). FCM `data`
    /// values are strings: this is how a nested list goes there (`adb_items`, `adb_act`).
    ///
    /// - Parameters:
    ///   - name: the member's name; set again as ``set(_:jsonWrittenBy:)-(MemberName,_)`` describes.
    ///   - write: writes exactly one JSON value and returns `true`, or returns `false` to leave the member out, as
    ///     for ``set(_:jsonWrittenBy:)-(MemberName,_)``.
    public mutating func set(_ name: MemberName, jsonTextWrittenBy write: (inout JSONWriter) -> Bool) {
        setWrittenMember(name, asText: true, write)
    }

    /// ``set(_:jsonTextWrittenBy:)-(MemberName,_)`` by the name's text.
    public mutating func set(_ key: String, jsonTextWrittenBy write: (inout JSONWriter) -> Bool) {
        setWrittenMember(MemberName(key), asText: true, write)
    }

    /// The member `name` set to the value `write` writes into this object's bytes, as JSON or (`asText`) as a string
    /// holding its text.
    private mutating func setWrittenMember(_ name: MemberName, asText: Bool, _ write: (inout JSONWriter) -> Bool) {
        guard !contains(name) else {
            // Rare (a template setting a key twice): written aside, then set in its place.
            var value = JSONWriter(reservingCapacity: 256)
            guard write(&value) else { return }
            precondition(!value.bytes.isEmpty, "set(\(name.text), …WrittenBy:) wrote no value; return false to leave the member out")
            return asText ? set(name, jsonText: value) : set(name, json: value)
        }
        let mark = writer.bytes.count
        var valueStart = 0
        var written = false
        append(name.text, tag: name.tag, name: name, isString: asText) { writer in
            valueStart = writer.bytes.count
            // As a writer of its own would start: no comma owed to the members before.
            writer.resetStreaming()
            written = write(&writer)
            guard written else { return }
            precondition(writer.bytes.count > valueStart, "set(\(name.text), …WrittenBy:) wrote no value; return false to leave the member out")
            assert(Self.isOneValue(writer.bytes[valueStart...]), "set(\(name.text), …WrittenBy:) wrote bytes that are not one JSON value")
            if asText { writer.quoteWrittenJSONText(from: valueStart) }
        }
        guard written else {
            writer.removeBytes(from: mark)
            members.removeLast()
            return
        }
        if !asText { members[members.count &- 1].isString = writer.bytes[valueStart] == UInt8(ascii: "\"") }
    }

    /// Whether `json` wrote one complete JSON value (checked in debug builds, where a plugin's tests run: an
    /// unfinished array would make the payload invalid JSON).
    private static func isOneValue(_ json: JSONWriter) -> Bool {
        isOneValue(json.bytes[...])
    }

    /// Whether `bytes` are one complete JSON value.
    private static func isOneValue(_ bytes: ArraySlice<UInt8>) -> Bool {
        (try? JSONValue(parsing: Array(bytes))) != nil
    }

    /// Sets `key` to the text `value` (see ``ContentText``: text still in the event is copied as it is); does
    /// nothing when `value` is `nil`.
    public mutating func set(_ key: String, text value: ContentText?) {
        guard let value else { return }
        setMember(key, tag: JSONObject.keyTag(of: key), name: nil, isString: true) { value.write(to: &$0) }
    }

    /// ``set(_:text:)-(String,_)`` with a prepared name.
    public mutating func set(_ name: MemberName, text value: ContentText?) {
        guard value != nil else { return }  // `value?.` below reads it in place (see `JSONWriter.member(_:text:)`)
        setMember(name.text, tag: name.tag, name: name, isString: true) { value?.write(to: &$0) }
    }

    /// A member name prepared once: its JSON text (quoted, escaped, with the colon) and its lookup tag. For the
    /// names a template sets on every render, kept in a `static let`:
    ///
    /// ```swift
    /// static let mode = PayloadObject.MemberName("adb_car_mode")
    /// data.set(Self.mode, mode)
    /// ```
    public struct MemberName: Sendable {
        /// The name, and its `"name":` as written.
        let key: JSONWriter.Key
        /// ``JSONObject/keyTag(of:)`` of the name.
        let tag: Int
        /// Whether the name is written as its own bytes (ASCII without escapes).
        let isVerbatim: Bool

        /// The name.
        public var text: String { key.name }

        /// Prepares `text`.
        public init(_ text: String) {
            self.key = JSONWriter.Key(text)
            self.tag = JSONObject.keyTag(of: text)
            self.isVerbatim = tag != JSONObject.untaggedKey && key.text.count == text.utf8.count + 3
        }
    }

    /// Appends the member `name` with the string `value` (nothing when `nil`) without looking for an existing
    /// member of that name: for builders whose names are distinct (``StandardFields``).
    mutating func appendNew(_ name: MemberName, _ value: String?) {
        assert(!contains(name.text), "appendNew(\(name.text)) on an object that has it")
        guard let value else { return }
        append(name.text, tag: name.tag, name: name, isString: true) { $0.write(string: value) }
    }

    /// ``appendNew(_:_:)-(_,String?)`` for a number.
    mutating func appendNew(_ name: MemberName, _ value: Int?) {
        assert(!contains(name.text), "appendNew(\(name.text)) on an object that has it")
        guard let value else { return }
        append(name.text, tag: name.tag, name: name, isString: false) { $0.write(.int(value)) }
    }

    /// ``appendNew(_:_:)-(_,String?)`` for text (see ``ContentText``).
    mutating func appendNew(_ name: MemberName, _ value: ContentText?) {
        assert(!contains(name.text), "appendNew(\(name.text)) on an object that has it")
        guard value != nil else { return }  // `value?.` below reads it in place (see `JSONWriter.member(_:text:)`)
        append(name.text, tag: name.tag, name: name, isString: true) { value?.write(to: &$0) }
    }

    /// ``appendNew(_:_:)-(_,String?)`` for ``DocumentText`` of `source`.
    mutating func appendNew(_ name: MemberName, _ value: DocumentText?, from source: TextSource) {
        assert(!contains(name.text), "appendNew(\(name.text)) on an object that has it")
        guard value != nil else { return }  // `value?.` below reads it in place (see `JSONWriter.member(_:text:)`)
        append(name.text, tag: name.tag, name: name, isString: true) { value?.write(to: &$0, from: source) }
    }

    /// Appends the member `name` (not set yet) with an object whose members `write` streams (``JSONWriter/member(_:_:)``):
    /// for a nested object nobody looks into, written in place instead of built aside (APNs `aps.alert`).
    mutating func appendNew(_ name: MemberName, streamingObject write: (inout JSONWriter) -> Void) {
        assert(!contains(name.text), "appendNew(\(name.text)) on an object that has it")
        append(name.text, tag: name.tag, name: name, isString: false) { writer in
            writer.beginObject()
            write(&writer)
            writer.endObject()
        }
    }

    /// Replaces the value of `key` (tagged `tag`, prepared as `name` when given) in place, or appends the member;
    /// `write` writes the value.
    private mutating func setMember(
        _ key: String,
        tag: Int,
        name: MemberName?,
        isString: Bool,
        _ write: (inout JSONWriter) -> Void
    ) {
        guard let index = index(of: key, tag: tag) else {
            return append(key, tag: tag, name: name, isString: isString, write)
        }
        // Rare (a template setting a key twice): write the new value aside and move the later members.
        var value = JSONWriter(reservingCapacity: 64)
        write(&value)
        let old = members[index]
        let range = Int(old.valueStart)..<Int(old.end)
        writer.replaceSubrange(range, with: value.bytes)
        let shift = Int32(value.bytes.count - range.count)
        members[index].end += shift
        members[index].isString = isString
        for later in members.indices where later > index {
            members[later].keyStart += shift
            members[later].valueStart += shift
            members[later].end += shift
        }
    }

    private mutating func append(
        _ key: String,
        tag: Int,
        name: MemberName?,
        isString: Bool,
        _ write: (inout JSONWriter) -> Void
    ) {
        if !members.isEmpty { writer.writeRaw(byte: UInt8(ascii: ",")) }
        let keyStart = writer.bytes.count
        let keyIsVerbatim: Bool
        if let name {
            // Copied from a span of the shared prefix: appending the array itself would take (and then drop) a
            // reference to it, an atomic operation on memory every rendering thread shares.
            writer.append(copying: name.key.text.span)
            keyIsVerbatim = name.isVerbatim
        } else {
            writer.write(string: key)
            keyIsVerbatim = tag != JSONObject.untaggedKey && writer.bytes.count - keyStart == key.utf8.count + 2
            writer.writeRaw(byte: UInt8(ascii: ":"))
        }
        let valueStart = writer.bytes.count
        write(&writer)
        members.append(
            Member(
                tag: tag,
                keyStart: Int32(truncatingIfNeeded: keyStart),
                valueStart: Int32(truncatingIfNeeded: valueStart),
                end: Int32(truncatingIfNeeded: writer.bytes.count),
                keyIsVerbatim: keyIsVerbatim,
                isString: isString
            )
        )
    }

    /// This object without the member `key` (the others in order).
    func removing(_ key: String) -> PayloadObject {
        var rest = PayloadObject(reservingBytes: bytes.count, members: members.count)
        for index in members.indices {
            let other = self.key(at: index)
            if other != key { rest.set(other, value(at: index)) }
        }
        return rest
    }

    // MARK: - Becoming a payload

    /// Where an object's members are once its bytes have become a wire payload's (``embed(after:then:)``): their
    /// places, moved by the bytes written before them. Read against the payload's bytes (``member(_:in:)``).
    struct Embedded: Sendable {
        /// The members' places in the payload's bytes.
        fileprivate let members: [Member]
        /// Where the members' bytes start in the payload's bytes.
        fileprivate let start: Int
        /// Where they end.
        fileprivate let end: Int

        /// The value of `key` in `payload` (the bytes this was embedded in), read back from them.
        func member(_ key: String, in payload: [UInt8]) -> JSONValue? {
            let tag = JSONObject.keyTag(of: key)
            guard let index = PayloadObject.index(of: members, in: payload, tag: tag, utf8: key.utf8.span, key: { key }) else { return nil }
            return PayloadObject.value(of: members[index], in: payload)
        }

        /// The object as it was before it was embedded: its bytes copied out of `payload`.
        func object(in payload: [UInt8]) -> PayloadObject {
            var object = PayloadObject(reservingBytes: 0, members: 0)
            object.writer.append(bytes: Array(payload[start..<end]))
            let shift = Int32(truncatingIfNeeded: start)
            object.members = members.map { member in
                var member = member
                member.keyStart -= shift
                member.valueStart -= shift
                member.end -= shift
                return member
            }
            return object
        }
    }

    /// Makes this object's bytes a wire payload in place, without copying them into another array: `prefix` is
    /// inserted before the members, and `writeRest` appends what follows them. The object is left empty.
    ///
    /// The bytes grow in place when their capacity allows (``StandardFields``' objects reserve more than their members
    /// usually take), and are reallocated once otherwise.
    ///
    /// - Returns: the payload's bytes, and where the members are in them.
    mutating func embed(after prefix: [UInt8], then writeRest: (inout JSONWriter) -> Void) -> (bytes: [UInt8], members: Embedded) {
        // Moved out, not copied: the array stays uniquely referenced, so it grows in place.
        var payload = JSONWriter(reservingCapacity: 0)
        swap(&payload, &writer)
        var places: [Member] = []
        swap(&places, &members)
        let memberBytes = payload.bytes.count
        payload.insert(prefix: prefix)
        let shift = Int32(truncatingIfNeeded: prefix.count)
        for index in places.indices {
            places[index].keyStart &+= shift
            places[index].valueStart &+= shift
            places[index].end &+= shift
        }
        payload.resetStreaming()
        writeRest(&payload)
        return (payload.bytes, Embedded(members: places, start: prefix.count, end: prefix.count &+ memberBytes))
    }

    // MARK: - Reading members

    /// The position of `key` (tagged `tag`) among the members.
    private func index(of key: String, tag: Int) -> Int? {
        index(tag: tag, utf8: key.utf8.span) { key }
    }

    /// Whether the object has the member `name` (prepared: its bytes and tag are not found again).
    func contains(_ name: MemberName) -> Bool {
        index(tag: name.tag, utf8: name.key.name.utf8.span) { name.key.name } != nil
    }

    /// Whether the object has a member whose key is the plain ASCII text `key` (its bytes): for keys read from an
    /// event, compared without a `String` made for them (``CustomMembers``).
    func contains(asciiKey key: Span<UInt8>) -> Bool {
        guard !key.isEmpty else { return contains("") }
        let tag = JSONObject.keyTag(count: key.count, first: key[0], last: key[key.count &- 1])
        return index(tag: tag, utf8: key) { String(plainASCII: key) } != nil
    }

    /// The position of the key tagged `tag` whose UTF-8 is `utf8` (made a `String` by `key` where bytes cannot be
    /// compared: a member's key written with escapes, or a key without a tag).
    private func index(tag: Int, utf8: Span<UInt8>, key: () -> String) -> Int? {
        Self.index(of: members, in: writer.bytes, tag: tag, utf8: utf8, key: key)
    }

    /// ``index(tag:utf8:key:)`` among `members`, written in `bytes`.
    private static func index(of members: [Member], in bytes: [UInt8], tag: Int, utf8: Span<UInt8>, key: () -> String) -> Int? {
        let text = bytes.span
        for (index, member) in members.enumerated() where JSONObject.tagsMayMatch(member.tag, tag) {
            if member.keyIsVerbatim, tag != JSONObject.untaggedKey {
                if Self.keyBytes(of: member, in: text, equal: utf8) { return index }
            } else if Self.key(of: member, in: bytes) == key() {
                return index
            }
        }
        return nil
    }

    /// Whether the key of `member`, written as its own bytes in `text`, is `utf8`, whose tag equals the member's (so
    /// the two have the same length). ASCII keys are equal exactly when their bytes are.
    private static func keyBytes(of member: Member, in text: Span<UInt8>, equal utf8: Span<UInt8>) -> Bool {
        let start = Int(member.keyStart) + 1
        var offset = 0
        while offset < utf8.count, text[start &+ offset] == utf8[offset] { offset &+= 1 }
        return offset == utf8.count
    }

    /// The key of the member at `index`, read back from the bytes.
    private func key(at index: Int) -> String {
        Self.key(of: members[index], in: writer.bytes)
    }

    /// The key of `member`, read back from `bytes`.
    private static func key(of member: Member, in bytes: [UInt8]) -> String {
        var parser = JSONParser(bytes: bytes)
        parser.offset = Int(member.keyStart)
        do throws(JSONParseError) {
            return try parser.parseTaggedString().string
        } catch {
            preconditionFailure("a key this object wrote does not parse at offset \(parser.offset): \(error)")
        }
    }

    /// The value of the member at `index`, read back from the bytes.
    private func value(at index: Int) -> JSONValue {
        Self.value(of: members[index], in: writer.bytes)
    }

    /// The value of `member`, read back from `bytes`.
    private static func value(of member: Member, in bytes: [UInt8]) -> JSONValue {
        do throws(JSONParseError) {
            return try JSONValue(parsing: bytes[Int(member.valueStart)..<Int(member.end)])
        } catch {
            preconditionFailure("a value this object wrote does not parse at offset \(member.valueStart): \(error)")
        }
    }
}

extension PayloadObject: ExpressibleByDictionaryLiteral {
    /// An object with these members, in this order (a later duplicate key replaces the earlier value).
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(reservingBytes: 32 * max(elements.count, 1), members: elements.count)
        for (key, value) in elements { set(key, value) }
    }
}

extension JSONWriter {
    /// Appends `object` with its braces.
    mutating func write(members object: PayloadObject) {
        writeRaw(byte: UInt8(ascii: "{"))
        append(bytes: object.bytes)
        writeRaw(byte: UInt8(ascii: "}"))
    }
}
