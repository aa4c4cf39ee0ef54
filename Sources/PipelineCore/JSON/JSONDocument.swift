/// A JSON text indexed in place: its bytes, and a flat list of its values in document order (a "tape").
///
/// Nothing is copied out of the text while parsing: a string stays a byte range until it is read, and an object
/// is a run of nodes, not an array of members. Events are read this way (``PushRequest/init(decoding:)-(JSONDocument)``,
/// ``FieldReader``), so an event's strings are created only for the fields that are read, and no tree of values is
/// built, retained and freed per event.
///
/// Parsing accepts and rejects exactly what ``JSONValue/init(parsing:maximumDepth:)`` does, with the same errors at
/// the same offsets, and ``value`` is the same tree.
public final class JSONDocument: Sendable {
    /// One value of the document. A container's node is followed by its contents (for an object: key, value, key,
    /// value, …), and ``next`` skips them.
    struct Node: Sendable {
        enum Kind: UInt8, Sendable {
            case null, `false`, `true`, number, string, array, object
        }

        var kind: Kind
        /// For strings: ``JSONDocument/plainASCII`` or ``JSONDocument/escaped``, and ``JSONDocument/mayHaveBrace``.
        /// For objects: ``JSONDocument/hasUntaggedKey``.
        var flags: UInt8
        /// The offset of the value's first byte (a string's opening quote).
        var start: UInt32
        /// Strings: the offset of the closing quote. Numbers and literals: the offset after the value. Containers: the
        /// number of members or elements.
        var end: UInt32
        /// The index of the node after this value (after a container's contents). For a key, which is always
        /// followed by its value, its tag instead (``JSONDocument/keyTag(_:at:count:)``).
        var next: UInt32
    }

    /// The tag of a key that is not plain ASCII: such keys are compared as `String`s.
    static let untaggedKey = UInt32.max

    /// A summary of the plain ASCII key of `count` bytes at `start` of `text`: its length (low 16 bits), first and
    /// last byte. Equal keys have equal tags, so a lookup compares bytes only where the tags match.
    @inline(__always)
    static func keyTag(_ text: Span<UInt8>, at start: Int, count: Int) -> UInt32 {
        guard count > 0 else { return 0 }
        return UInt32(truncatingIfNeeded: count & 0xFFFF) | UInt32(text[start]) << 16 | UInt32(text[start &+ count &- 1]) << 24
    }

    /// A string without escapes whose bytes are all ASCII: its text is its bytes.
    static let plainASCII: UInt8 = 1
    /// A string with backslash escapes: its text is unescaped when read.
    static let escaped: UInt8 = 2
    /// A string that may contain `{` (it has one, or escapes that may stand for one); one without cannot hold a
    /// personalization placeholder.
    static let mayHaveBrace: UInt8 = 4
    /// For objects: one of the keys is not plain ASCII (it has no tag), so lookups compare keys as `String`s.
    static let hasUntaggedKey: UInt8 = 8

    /// The text.
    let bytes: [UInt8]
    /// The values; the root is node 0.
    let nodes: [Node]

    /// Parses and indexes one JSON value (surrounding whitespace allowed).
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 input, kept by the document (an array's storage is shared, not copied).
    ///   - maximumDepth: the nesting limit.
    /// - Throws: ``JSONParseError`` with the byte offset of the problem, as ``JSONValue/init(parsing:maximumDepth:)``.
    public init(parsing bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) throws(JSONParseError) {
        // Offsets and node indexes are kept in 32 bits (signed in readers' places, ``RenderDiagnostics/Place``); a
        // Kafka record is far smaller. A text has at most one node per byte.
        guard bytes.count < Int(Int32.max) else { throw JSONParseError(.tooLarge, at: 0) }
        // The nodes are written into an array of fixed capacity (no growth, no per-node checks of the array's
        // uniqueness). Compact events have a value (or key) per 6 to 20 bytes: room for one per 4 bytes holds them
        // without holding much more than needed while the event is in flight. Denser text (arrays of one-digit
        // numbers, or an unclosed run of `[`) is indexed again with room for one node per byte, more than any text
        // can have (every node starts at a byte of its own).
        do throws(JSONParseError) {
            self.nodes = try Self.index(bytes, maximumDepth: maximumDepth, capacity: bytes.count / 4 + 16)
        } catch let error where error.kind == .tooManyNodes {
            self.nodes = try Self.index(bytes, maximumDepth: maximumDepth, capacity: bytes.count + 1)
        }
        self.bytes = bytes
    }

    /// The nodes of `bytes`, in an array of `capacity`.
    ///
    /// - Throws: ``JSONParseError``; ``JSONParseError/Kind/tooManyNodes`` when `capacity` is too small.
    private static func index(_ bytes: [UInt8], maximumDepth: Int, capacity: Int) throws(JSONParseError) -> [Node] {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        guard parser.offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: parser.offset) }
        let nodes = try [Node](capacity: capacity) { (output: inout OutputSpan<Node>) throws(JSONParseError) in
            try parser.indexValue(into: &output)
        }
        guard parser.isAtEnd else { throw JSONParseError(.trailingData, at: parser.offset) }
        return nodes
    }

    /// The whole document as a ``JSONValue`` tree.
    public var value: JSONValue {
        value(at: 0)
    }

    /// The text of the string member `key` of the root object; `nil` when the root is not an object, or the member
    /// is absent or not a string (as `JSONObject`'s `object[key]?.stringValue`). For reading the fields of a flat
    /// record without building its tree.
    public func string(forKey key: String) -> String? {
        guard nodes[0].kind == .object, let (_, value) = member(key, inObjectAt: 0), nodes[value].kind == .string else { return nil }
        return string(at: value)
    }

    // MARK: - Reading nodes

    /// The kind of the value at `index`.
    func kind(at index: Int) -> Node.Kind {
        nodes[index].kind
    }

    /// The number of members (object) or elements (array) of the container at `index`.
    func count(at index: Int) -> Int {
        Int(nodes[index].end)
    }

    /// The index of the node after the value (not a key) at `index` and its contents.
    func next(after index: Int) -> Int {
        Int(nodes[index].next)
    }

    /// Whether the string at `index` may contain `{` (see ``mayHaveBrace``).
    func mayHaveBrace(at index: Int) -> Bool {
        nodes[index].flags & Self.mayHaveBrace != 0
    }

    /// Whether the string at `index` is written with backslash escapes (else its bytes are its text, and need no
    /// escape when written again).
    func isEscaped(at index: Int) -> Bool {
        nodes[index].flags & Self.escaped != 0
    }

    /// Whether the string at `index` is plain ASCII without escapes (its bytes are its text, and compare as it does).
    func isPlainASCII(at index: Int) -> Bool {
        nodes[index].flags & Self.plainASCII != 0
    }

    /// Writes the string at `index` as a JSON string, as ``JSONWriter/write(string:)`` writes its text: its bytes as
    /// they are when it has no escapes (they need none).
    func writeString(at index: Int, into writer: inout JSONWriter) {
        guard nodes[index].flags & Self.escaped == 0 else { return writer.write(string: string(at: index)) }
        let bytes = self.bytes  // a local: a span of a class's stored property cannot outlive the property access
        writer.write(unescapedStringUTF8: bytes.span.extracting(unescapedRange(ofStringAt: index)))
    }

    /// Whether the string at `index` is empty.
    func isEmptyString(at index: Int) -> Bool {
        nodes[index].end == nodes[index].start &+ 1
    }

    /// The number of UTF-8 bytes of the string at `index`, which has no escapes.
    func unescapedByteCount(ofStringAt index: Int) -> Int {
        Int(nodes[index].end) &- Int(nodes[index].start) &- 1
    }

    /// The range in ``bytes`` of the text of the string at `index`, which has no escapes (between its quotes): for a
    /// caller that holds the bytes itself and reads them without a closure.
    func unescapedRange(ofStringAt index: Int) -> Range<Int> {
        let node = nodes[index]
        return Int(node.start) &+ 1..<Int(node.end)
    }

    /// The UTF-8 text of the string at `index`, which has no escapes, as it is in the document: `write` is given it.
    func withUnescapedBytes<Result>(ofStringAt index: Int, _ write: (Span<UInt8>) -> Result) -> Result {
        let bytes = self.bytes  // a local: a span of a class's stored property cannot outlive the property access
        return write(bytes.span.extracting(unescapedRange(ofStringAt: index)))
    }

    /// Whether the string at `index` has no escapes and its bytes are `text`'s UTF-8, byte for byte (then the two are
    /// equal as `String`s; texts equal only as `String`s, by canonical equivalence, are not found here).
    func hasUnescapedBytes(ofStringAt index: Int, equalTo text: String) -> Bool {
        let node = nodes[index]
        let start = Int(node.start) &+ 1
        let other = text.utf8.span
        return node.flags & Self.escaped == 0 && Int(node.end) &- start == other.count && keyBytes(at: start, equal: other)
    }

    /// The colour in the string at `index` as ``HexColor/normalize(_:)`` returns it (six hex digits, a leading `#`
    /// dropped), read from the string's bytes; `nil` when the string has escapes or is not such a colour.
    func hexColor(ofStringAt index: Int) -> String? {
        guard nodes[index].flags & Self.escaped == 0 else { return nil }
        return withUnescapedBytes(ofStringAt: index) { bytes -> String? in
            HexColor.digits(ofUTF8: bytes).map { String(plainASCII: bytes.extracting($0)) }
        }
    }

    /// Appends the UTF-8 text of the string at `index` to `target`: its bytes as they are when it has no escapes.
    func appendText(ofStringAt index: Int, to target: inout [UInt8]) {
        guard nodes[index].flags & Self.escaped == 0 else { return target.append(copying: string(at: index).utf8.span) }
        withUnescapedBytes(ofStringAt: index) { target.append(copying: $0) }
    }

    /// The text of the string at `index`.
    func string(at index: Int) -> String {
        Self.text(of: nodes[index], in: bytes)
    }

    /// The text of the string `node` over `bytes` (also for the parser, before the document exists).
    static func text(of node: Node, in bytes: [UInt8]) -> String {
        guard node.flags & escaped != 0 else {
            // Checked to be valid UTF-8 when parsed.
            return String(decoding: bytes[Int(node.start) + 1..<Int(node.end)], as: UTF8.self)
        }
        var parser = JSONParser(bytes: bytes)
        parser.offset = Int(node.start)
        do throws(JSONParseError) {
            return try parser.parseTaggedString().string
        } catch {
            preconditionFailure("a string that parsed once fails to parse again at offset \(node.start): \(error)")
        }
    }

    /// The RFC 3339 date-time in the string at `index`, parsed from its bytes when it has no escapes.
    func timestamp(at index: Int) throws(RFC3339Error) -> Timestamp {
        let node = nodes[index]
        guard node.flags & Self.escaped == 0 else { return try Timestamp(rfc3339: string(at: index)) }
        let bytes = self.bytes  // a local: a span of a class's stored property cannot outlive the property access
        return try Timestamp(rfc3339UTF8: bytes.span.extracting(Int(node.start) + 1..<Int(node.end)))
    }

    /// The number at `index` (``JSONValue/int(_:)`` or ``JSONValue/double(_:)``).
    func number(at index: Int) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.offset = Int(nodes[index].start)
        do throws(JSONParseError) {
            return try parser.parseNumber()
        } catch {
            preconditionFailure("a number that parsed once fails to parse again at offset \(nodes[index].start): \(error)")
        }
    }

    /// The value at `index` as a tree.
    func value(at index: Int) -> JSONValue {
        switch nodes[index].kind {
        case .null: .null
        case .false: .bool(false)
        case .true: .bool(true)
        case .number: number(at: index)
        case .string: .string(string(at: index))
        case .object: .object(object(at: index))
        case .array: .array(elements(at: index))
        }
    }

    /// Calls `body` with each member of the object at `index`, in order: its position, and the nodes of its key and
    /// of its value.
    func forEachMember(ofObjectAt index: Int, _ body: (_ position: Int, _ key: Int, _ value: Int) -> Void) {
        var key = index + 1
        for position in 0..<count(at: index) {
            body(position, key, key + 1)
            key = next(after: key + 1)
        }
    }

    /// The object at `index` as a ``JSONObject``.
    func object(at index: Int) -> JSONObject {
        var members: [JSONObject.Member] = []
        members.reserveCapacity(count(at: index))
        forEachMember(ofObjectAt: index) { _, key, value in
            members.append(JSONObject.Member(key: string(at: key), value: self.value(at: value), keyTag: objectKeyTag(at: key)))
        }
        return JSONObject(members: members)
    }

    private func elements(at index: Int) -> [JSONValue] {
        let count = count(at: index)
        var elements: [JSONValue] = []
        elements.reserveCapacity(count)
        var element = index + 1
        for _ in 0..<count {
            elements.append(value(at: element))
            element = next(after: element)
        }
        return elements
    }

    /// ``JSONObject/keyTag(of:)`` of the string at `index`, from its bytes when it is plain ASCII.
    private func objectKeyTag(at index: Int) -> Int {
        let node = nodes[index]
        guard node.flags & Self.plainASCII != 0 else { return JSONObject.keyTag(of: string(at: index)) }
        let first = Int(node.start) + 1
        let end = Int(node.end)
        return first == end ? 0 : JSONObject.keyTag(count: end - first, first: bytes[first], last: bytes[end - 1])
    }

    // MARK: - Keys

    /// The position among the members, and the value's node, of `key` in the object at `index`.
    ///
    /// Two ASCII keys are equal exactly when their bytes are; any other pair is compared as `String`s (canonical
    /// equivalence: U+212A KELVIN SIGN equals "K"), as ``JSONObject`` does.
    func member(_ key: String, inObjectAt index: Int) -> (position: Int, value: Int)? {
        let text = key.utf8Span
        let needle = text.span
        let tag = Self.lookupTag(of: needle, isKnownASCII: text.isKnownASCII)
        guard tag != Self.untaggedKey, hasOnlyTaggedKeys(index) else {
            return member(comparingText: key, tag: tag, inObjectAt: index)
        }
        return member(taggedKey: needle, tag: tag, inObjectAt: index)
    }

    /// The tag a key given as its UTF-8 bytes is looked up with: ``keyTag(_:at:count:)`` when it is plain ASCII (known
    /// from a `String`'s flags when `isKnownASCII`, ``Swift/UTF8Span/isKnownASCII``, or else checked), ``untaggedKey``
    /// otherwise (compared as a `String`).
    @inline(__always)
    static func lookupTag(of needle: Span<UInt8>, isKnownASCII: Bool) -> UInt32 {
        if isKnownASCII { return keyTag(needle, at: 0, count: needle.count) }
        var needleBits: UInt8 = 0
        var offset = 0
        while offset < needle.count {
            needleBits |= needle[offset]
            offset &+= 1
        }
        return needleBits < 0x80 ? keyTag(needle, at: 0, count: needle.count) : untaggedKey
    }

    /// Whether the object at `index` is searched by tag: all its keys are plain ASCII.
    func hasOnlyTaggedKeys(_ index: Int) -> Bool {
        nodes[index].flags & Self.hasUntaggedKey == 0
    }

    /// The tag of the key node `keyNode` (of an object with only tagged keys).
    func tag(ofKeyAt keyNode: Int) -> UInt32 {
        nodes[keyNode].next
    }

    /// Whether the key node `keyNode`, tagged `tag`, is `needle`.
    @inline(__always)
    func isKey(at keyNode: Int, _ needle: Span<UInt8>, tag: UInt32) -> Bool {
        guard nodes[keyNode].next == tag else { return false }
        let start = Int(nodes[keyNode].start) &+ 1
        return Int(nodes[keyNode].end) &- start == needle.count && keyBytes(at: start, equal: needle)
    }

    /// ``member(_:inObjectAt:)`` for a key given as its bytes, which are plain ASCII (a personalization
    /// placeholder's name): no `String` is made for it, unless the object has a key that is not plain ASCII.
    func member(asciiKey needle: Span<UInt8>, inObjectAt index: Int) -> (position: Int, value: Int)? {
        guard hasOnlyTaggedKeys(index) else {
            return member(String(plainASCII: needle), inObjectAt: index)
        }
        return member(taggedKey: needle, tag: Self.keyTag(needle, at: 0, count: needle.count), inObjectAt: index)
    }

    /// The member whose key is `needle` (plain ASCII, its tag `tag`) in the object at `index`, all of whose keys are
    /// tagged: only a key with the same tag can be equal, and only its bytes are compared. A missed lookup (an
    /// optional field that is absent) reads one tag per member.
    func member(taggedKey needle: Span<UInt8>, tag: UInt32, inObjectAt index: Int) -> (position: Int, value: Int)? {
        let count = Int(nodes[index].end)
        var keyNode = index &+ 1
        var position = 0
        while position < count {
            if isKey(at: keyNode, needle, tag: tag) { return (position, keyNode &+ 1) }
            keyNode = Int(nodes[keyNode &+ 1].next)
            position &+= 1
        }
        return nil
    }

    /// ``member(_:inObjectAt:)`` for a key that is not plain ASCII, or in an object with such a key: those keys
    /// are compared as `String`s.
    private func member(comparingText key: String, tag: UInt32, inObjectAt index: Int) -> (position: Int, value: Int)? {
        let needle = key.utf8.span
        let count = Int(nodes[index].end)
        var keyNode = index &+ 1
        var position = 0
        while position < count {
            let node = nodes[keyNode]
            if node.next == tag, tag != Self.untaggedKey {
                let start = Int(node.start) &+ 1
                if Int(node.end) &- start == needle.count, keyBytes(at: start, equal: needle) {
                    return (position, keyNode &+ 1)
                }
            } else if node.next == Self.untaggedKey || tag == Self.untaggedKey, string(at: keyNode) == key {
                return (position, keyNode &+ 1)
            }
            keyNode = Int(nodes[keyNode &+ 1].next)
            position &+= 1
        }
        return nil
    }

    /// Whether ``bytes`` holds `needle` at `start` (a key's or a string's text): eight bytes at a time, the last word
    /// overlapping the one before, and byte by byte below eight.
    @inline(__always)
    private func keyBytes(at start: Int, equal needle: Span<UInt8>) -> Bool {
        let bytes = self.bytes  // a local: a span of a class's stored property cannot outlive the property access
        let text = bytes.span.extracting(start..<start &+ needle.count)
        let count = needle.count
        guard count >= 8 else {
            var offset = 0
            while offset < count {
                if text[offset] != needle[offset] { return false }
                offset &+= 1
            }
            return true
        }
        var offset = 0
        while offset &+ 8 < count {
            if SWAR.load(text, at: offset) != SWAR.load(needle, at: offset) { return false }
            offset &+= 8
        }
        return SWAR.load(text, at: count &- 8) == SWAR.load(needle, at: count &- 8)
    }

    /// Whether the key nodes `a` and `b` over `bytes` are equal, as ``JSONObject`` compares keys.
    static func keysEqual(_ a: Node, _ b: Node, in bytes: [UInt8]) -> Bool {
        guard a.next != untaggedKey, b.next != untaggedKey else {
            return text(of: a, in: bytes) == text(of: b, in: bytes)
        }
        guard a.next == b.next else { return false }
        let count = Int(a.end) - Int(a.start)
        guard Int(b.end) - Int(b.start) == count else { return false }
        let text = bytes.span
        let aStart = Int(a.start)
        let bStart = Int(b.start)
        var offset = 1
        while offset < count {
            if text[aStart &+ offset] != text[bStart &+ offset] { return false }
            offset &+= 1
        }
        return true
    }
}

extension JSONParser {
    /// The bytes of the next value, checked as ``nextValue()`` checks them (the same errors at the same offsets)
    /// without building a tree; `nil` when only whitespace remains. For streams of events, each then read in place
    /// from its bytes (`TemplateRegistry.render(eventBytes:)`).
    ///
    /// - Throws: ``JSONParseError`` with the offset of the problem, as ``nextValue()``.
    public mutating func nextValueRange() throws(JSONParseError) -> Range<Int>? {
        skipWhitespace()
        guard offset < bytes.count else { return nil }
        let start = offset
        valueStart = start
        // Room for the nodes of an event of a few kilobytes; a longer or denser value is read again by the tree
        // parser (its errors are the same), rather than reserving room for the whole rest of the stream.
        do throws(JSONParseError) {
            _ = try [JSONDocument.Node](capacity: min(bytes.count - start, 16_384) / 4 + 16) {
                (output: inout OutputSpan<JSONDocument.Node>) throws(JSONParseError) in
                try indexValue(into: &output)
            }
        } catch let error where error.kind == .tooManyNodes {
            offset = start
            _ = try nextValue()
        }
        return start..<offset
    }

    /// Appends `node` to `nodes`.
    ///
    /// - Throws: ``JSONParseError/Kind/tooManyNodes`` when `nodes` is full (then indexed again with more room).
    @inline(__always)
    private static func append(_ node: JSONDocument.Node, to nodes: inout OutputSpan<JSONDocument.Node>) throws(JSONParseError) {
        // The test `append` makes, so that it is made once.
        guard nodes.count < nodes.capacity else { throw JSONParseError(.tooManyNodes, at: Int(node.start)) }
        nodes.append(node)
    }

    /// Indexes the value at ``offset`` into `nodes` (``JSONDocument``), checking it as ``nextValue()`` does, and
    /// moves past it.
    ///
    /// One loop over the text rather than a call per value. The open containers are a chain through their own
    /// nodes: until a container closes, its ``JSONDocument/Node/next`` is the index of the container around it (-1
    /// for none), and that one's ``JSONDocument/Node/end`` its count of members or elements so far.
    mutating func indexValue(into nodes: inout OutputSpan<JSONDocument.Node>) throws(JSONParseError) {
        let text = bytes  // a local: its span is read while `offset` and the helpers change `self`
        let span = text.span
        var offset = self.offset
        // The innermost open container (its node), -1 at the top level; its members or elements so far.
        var container = -1
        var depth = 0
        var isObject = false
        var count: UInt32 = 0
        // One bit per key tag seen so far in the object (a Bloom filter): a key whose bit is clear is new, and the
        // member-by-member comparison is skipped. All bits are set after an untagged key (not plain ASCII: always
        // compared). An object's bits are kept while a container in it is open for the first 16 levels; deeper, it
        // is returned to with all bits set.
        var seenTags: UInt64 = 0
        var outerSeenTags = InlineArray<16, UInt64>(repeating: 0)
        while true {
            if isObject {
                guard try Self.nextByte(in: span, at: &offset) == UInt8(ascii: "\"") else {
                    throw JSONParseError(.unexpectedCharacter, at: offset)
                }
                let keyOffset = offset
                var key = try indexString(in: span, at: &offset)
                if key.flags & JSONDocument.plainASCII != 0 {
                    let start = Int(key.start) &+ 1
                    key.next = JSONDocument.keyTag(span, at: start, count: Int(key.end) &- start)
                } else {
                    key.next = JSONDocument.untaggedKey
                    nodes[container].flags |= JSONDocument.hasUntaggedKey
                    seenTags = .max
                }
                let tagBit: UInt64 = 1 << ((key.next &* 0x9E37_79B1) >> 26)
                if seenTags & tagBit != 0 {
                    // The earlier keys of this object, reached through the nodes: each member's value is complete.
                    var other = container &+ 1
                    for _ in 0..<count {
                        if JSONDocument.keysEqual(nodes[other], key, in: text) { throw JSONParseError(.duplicateKey, at: keyOffset) }
                        other = Int(nodes[other &+ 1].next)
                    }
                }
                seenTags |= tagBit
                try Self.append(key, to: &nodes)
                guard try Self.nextByte(in: span, at: &offset) == UInt8(ascii: ":") else {
                    throw JSONParseError(.unexpectedCharacter, at: offset)
                }
                offset &+= 1
            }

            // A value.
            let byte = try Self.nextByte(in: span, at: &offset)
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth < maximumDepth else { throw JSONParseError(.tooDeeplyNested, at: offset) }
                let index = nodes.count
                let opener = JSONDocument.Node(
                    kind: byte == UInt8(ascii: "{") ? .object : .array,
                    flags: 0,
                    start: UInt32(truncatingIfNeeded: offset),
                    end: 0,
                    next: UInt32(truncatingIfNeeded: container)
                )
                try Self.append(opener, to: &nodes)
                offset &+= 1
                // `}` and `]` follow `{` and `[` by two in ASCII.
                if try Self.nextByte(in: span, at: &offset) == byte &+ 2 {
                    offset &+= 1
                    nodes[index].next = UInt32(truncatingIfNeeded: nodes.count)
                } else {
                    if container >= 0 { nodes[container].end = count }
                    if depth < outerSeenTags.count { outerSeenTags[depth] = seenTags }
                    container = index
                    depth &+= 1
                    isObject = opener.kind == .object
                    count = 0
                    seenTags = 0
                    continue
                }
            case UInt8(ascii: "\""):
                var node = try indexString(in: span, at: &offset)
                node.next = UInt32(truncatingIfNeeded: nodes.count &+ 1)
                try Self.append(node, to: &nodes)
            default:
                self.offset = offset
                let kind: JSONDocument.Node.Kind
                switch byte {
                case UInt8(ascii: "t"): try expectLiteral("true"); kind = .true
                case UInt8(ascii: "f"): try expectLiteral("false"); kind = .false
                case UInt8(ascii: "n"): try expectLiteral("null"); kind = .null
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try parseNumber(); kind = .number
                default: throw JSONParseError(.unexpectedCharacter, at: offset)
                }
                let node = JSONDocument.Node(
                    kind: kind,
                    flags: 0,
                    start: UInt32(truncatingIfNeeded: offset),
                    end: UInt32(truncatingIfNeeded: self.offset),
                    next: UInt32(truncatingIfNeeded: nodes.count &+ 1)
                )
                offset = self.offset
                try Self.append(node, to: &nodes)
            }

            // After a value: past a comma another member or element follows; past the closer, the container is
            // complete, and is itself a value of the one around it.
            while true {
                guard container >= 0 else {
                    self.offset = offset
                    return
                }
                count &+= 1
                let separator = try Self.nextByte(in: span, at: &offset)
                if separator == UInt8(ascii: ",") {
                    offset &+= 1
                    break
                }
                guard separator == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw JSONParseError(.unexpectedCharacter, at: offset)
                }
                offset &+= 1
                nodes[container].end = count
                let outer = Int(Int32(bitPattern: nodes[container].next))
                nodes[container].next = UInt32(truncatingIfNeeded: nodes.count)
                container = outer
                depth &-= 1
                if container >= 0 {
                    isObject = nodes[container].kind == .object
                    count = nodes[container].end
                    seenTags = depth < outerSeenTags.count ? outerSeenTags[depth] : .max
                }
            }
        }
    }

    /// The byte at `offset`, after any whitespace there (moving `offset` past it).
    ///
    /// - Throws: ``JSONParseError/Kind/unexpectedEndOfInput`` when the text ends first.
    @inline(__always)
    private static func nextByte(in span: Span<UInt8>, at offset: inout Int) throws(JSONParseError) -> UInt8 {
        guard span.isIndex(offset) else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
        let byte = span[offset]
        // Compact JSON (every event) has no whitespace: that case is this one test.
        guard byte <= 0x20 else { return byte }
        return try nextByte(afterWhitespaceIn: span, at: &offset)
    }

    /// ``nextByte(in:at:)`` where the byte at `offset` may be whitespace.
    private static func nextByte(afterWhitespaceIn span: Span<UInt8>, at offset: inout Int) throws(JSONParseError) -> UInt8 {
        while offset < span.count {
            switch span[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset &+= 1
            case let byte: return byte
            }
        }
        throw JSONParseError(.unexpectedEndOfInput, at: offset)
    }

    /// Checks the string at `offset` (of ``bytes``, as `span`), moves past it and returns its node
    /// (``JSONDocument/Node/next`` left for the caller).
    @inline(__always)
    private mutating func indexString(in span: Span<UInt8>, at offset: inout Int) throws(JSONParseError) -> JSONDocument.Node {
        let start = offset
        let (end, isASCII, hasBrace) = Self.plainRun(in: span, from: start &+ 1)
        if span.isIndex(end), span[end] == UInt8(ascii: "\"") {
            var flags = JSONDocument.plainASCII | (hasBrace ? JSONDocument.mayHaveBrace : 0)
            if !isASCII {
                do {
                    _ = try UTF8Span(validating: span.extracting(start &+ 1..<end))
                } catch {
                    throw JSONParseError(.invalidUTF8, at: start)
                }
                flags &= ~JSONDocument.plainASCII
            }
            offset = end &+ 1
            return JSONDocument.Node(kind: .string, flags: flags, start: UInt32(truncatingIfNeeded: start), end: UInt32(truncatingIfNeeded: end), next: 0)
        }
        // Escapes, or an error: the tree parser's path checks it (with the same errors); the text is unescaped again
        // when it is read.
        self.offset = start
        _ = try parseTaggedString()
        offset = self.offset
        return JSONDocument.Node(
            kind: .string,
            flags: JSONDocument.escaped | JSONDocument.mayHaveBrace,
            start: UInt32(truncatingIfNeeded: start),
            end: UInt32(truncatingIfNeeded: offset &- 1),
            next: 0
        )
    }
}

extension Span {
    /// Whether `index` is an index of the span, tested as the subscript tests it (one unsigned comparison, which also
    /// rules out a negative index): the subscript's own test is then dropped.
    @inline(__always)
    fileprivate func isIndex(_ index: Int) -> Bool {
        UInt(bitPattern: index) < UInt(bitPattern: count)
    }
}

extension String {
    /// The text of `bytes`, which are plain ASCII (a key or a placeholder's name taken from a text at ASCII
    /// delimiters); made without going through an array.
    init(plainASCII bytes: Span<UInt8>) {
        do {
            self.init(copying: try UTF8Span(validating: bytes))
        } catch {
            preconditionFailure("plain ASCII bytes are valid UTF-8: \(error)")
        }
    }
}
