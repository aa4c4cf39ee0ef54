/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// - Rejects duplicate object keys, unescaped control characters, invalid UTF-8, unpaired
///   surrogate escapes, non-finite numbers and nesting deeper than ``maximumDepth``.
/// - Reads one value with ``JSONValue/init(parsing:maximumDepth:)``, or several values separated by
///   whitespace (JSON lines) with ``nextValue()``.
public struct JSONParser: Sendable {
    /// The default nesting limit.
    public static let defaultMaximumDepth = 64

    let bytes: [UInt8]
    /// The offset of the next byte to read.
    public internal(set) var offset: Int
    /// The offset of the first byte of the value ``nextValue()`` or ``nextValueRange()`` read last, or failed to read
    /// (where to resynchronise from after an error, ``skip(toLineStartingWith:after:)``).
    public internal(set) var valueStart = 0
    /// Arrays and objects nested deeper than this are an error (protects the stack).
    public let maximumDepth: Int
    /// Members of the objects being parsed, innermost last. Each object's members are collected
    /// here and copied out once, at the exact size, when it closes: appending to the object's own
    /// array would reallocate it as it grows (1, 2, 4, 8, … members).
    private var memberStack: [JSONObject.Member] = []
    /// Elements of the arrays being parsed, innermost last (same reason as ``memberStack``).
    private var elementStack: [JSONValue] = []

    /// Creates a parser positioned at the start of `bytes`.
    public init(bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) {
        self.bytes = bytes
        self.offset = 0
        self.maximumDepth = maximumDepth
    }

    /// Whether only whitespace remains.
    public var isAtEnd: Bool {
        var copy = self
        copy.skipWhitespace()
        return copy.offset >= copy.bytes.count
    }

    /// Parses the next value, skipping leading whitespace; `nil` when only whitespace remains.
    ///
    /// - Throws: ``JSONParseError`` with the offset of the problem. The parser's ``offset`` is then
    ///   unspecified; resynchronise on JSON lines with `skip(toLineStartingWith: UInt8(ascii: "{"), after: valueStart)`.
    public mutating func nextValue() throws(JSONParseError) -> JSONValue? {
        skipWhitespace()
        guard offset < bytes.count else { return nil }
        valueStart = offset
        return try parseValue(depth: 0)
    }

    /// Moves to the start of the first line after `from` whose first byte is `byte`, or to the end.
    ///
    /// After an error, pass ``valueStart``: the value that failed may have run on into the lines after its own (a
    /// line cut short reads on into the next event), so the error's offset can be on a later line than the next
    /// event's start.
    public mutating func skip(toLineStartingWith byte: UInt8, after from: Int) {
        var index = from
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n"), index + 1 < bytes.count, bytes[index + 1] == byte {
                offset = index + 1
                return
            }
            index += 1
        }
        offset = bytes.count
    }

    // MARK: - Values

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw JSONParseError(.unexpectedCharacter, at: offset)
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw JSONParseError(.tooDeeplyNested, at: offset) }
        offset += 1  // {
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            offset += 1
            return .object(JSONObject())
        }
        if memberStack.capacity == 0 { memberStack.reserveCapacity(64) }  // grown once, not 1, 2, 4, …
        let base = memberStack.count
        defer { memberStack.removeSubrange(base...) }
        while true {
            skipWhitespace()
            let keyOffset = offset
            guard try peek() == UInt8(ascii: "\"") else { throw JSONParseError(.unexpectedCharacter, at: offset) }
            let (key, keyTag) = try parseTaggedString()
            // Duplicates: compare the `String`s only where the tags allow equality (see `JSONObject.keyTag(of:)`).
            var index = base
            while index < memberStack.count {
                if JSONObject.tagsMayMatch(memberStack[index].keyTag, keyTag), memberStack[index].key == key {
                    throw JSONParseError(.duplicateKey, at: keyOffset)
                }
                index += 1
            }
            skipWhitespace()
            guard try peek() == UInt8(ascii: ":") else { throw JSONParseError(.unexpectedCharacter, at: offset) }
            offset += 1
            let value = try parseValue(depth: depth)
            memberStack.append(JSONObject.Member(key: key, value: value, keyTag: keyTag))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                return .object(JSONObject(members: Array(memberStack[base...])))
            default: throw JSONParseError(.unexpectedCharacter, at: offset)
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw JSONParseError(.tooDeeplyNested, at: offset) }
        offset += 1  // [
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            offset += 1
            return .array([])
        }
        if elementStack.capacity == 0 { elementStack.reserveCapacity(16) }
        let base = elementStack.count
        defer { elementStack.removeSubrange(base...) }
        while true {
            elementStack.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                return .array(Array(elementStack[base...]))
            default: throw JSONParseError(.unexpectedCharacter, at: offset)
            }
        }
    }

    // MARK: - Scalars

    /// The end of the run of plain string bytes starting at `start` (bytes other than `"`, `\` and control
    /// characters), whether they are all ASCII, and whether one of them is `{` (a personalization placeholder can
    /// only be where one is).
    ///
    /// Eight bytes at a time (see ``SWAR``), then byte by byte where fewer than eight are left.
    @inline(__always)
    static func plainRun(in span: Span<UInt8>, from start: Int) -> (end: Int, isASCII: Bool, hasBrace: Bool) {
        var index = start
        var runBits: UInt64 = 0  // the OR of the run's bytes so far
        var braceBits: UInt64 = 0
        // The bytes from `index` on: a word is loaded from its start without a bounds test of its own.
        var rest = span.extracting(droppingFirst: start)
        while rest.count >= 8 {
            let word = SWAR.load(rest, at: 0)
            let stops = SWAR.stopBits(word)
            // The bytes up to the first stop (all eight when there is none): the stop itself is neither `{` nor
            // beyond ASCII, and the bytes after it are cleared.
            let run = word & (stops ^ (stops &- 1))
            runBits |= run
            braceBits |= SWAR.matchBits(of: UInt8(ascii: "{"), in: run)
            if stops != 0 {
                return (index &+ stops.trailingZeroBitCount >> 3, SWAR.isASCII(runBits), SWAR.hasMatch(braceBits))
            }
            index &+= 8
            rest = rest.extracting(droppingFirst: 8)
        }
        var hasBrace = SWAR.hasMatch(braceBits)
        while index < span.count {
            let byte = span[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            runBits |= UInt64(byte)
            hasBrace = hasBrace || byte == UInt8(ascii: "{")
            index += 1
        }
        return (index, SWAR.isASCII(runBits), hasBrace)
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        try parseTaggedString().string
    }

    /// A string, and its ``JSONObject/keyTag(of:)`` (taken from the bytes when it has no escapes).
    mutating func parseTaggedString() throws(JSONParseError) -> (string: String, keyTag: Int) {
        let start = offset
        offset += 1  // opening quote
        // Fast path: no escapes. Find the end of the run of plain bytes (not `"`, `\` or a control
        // character). This loop is the parser's hottest; it reads through the array's `Span`, which is
        // bounds-checked and safe but avoids the array's copy-on-write and retain traffic per byte.
        let (index, isASCII, _) = Self.plainRun(in: bytes.span, from: offset)
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            let string: String
            let keyTag: Int
            if isASCII {
                // ASCII is valid UTF-8: skip `String(validating:)`, which is generic and slow here.
                string = String(decoding: bytes[offset..<index], as: UTF8.self)
                keyTag = index == offset ? 0 : JSONObject.keyTag(count: index - offset, first: bytes[offset], last: bytes[index - 1])
            } else if let validated = String(validating: bytes[offset..<index], as: UTF8.self) {
                string = validated
                keyTag = JSONObject.untaggedKey
            } else {
                throw JSONParseError(.invalidUTF8, at: start)
            }
            offset = index + 1
            return (string, keyTag)
        }
        if index < bytes.count, bytes[index] < 0x20 { throw JSONParseError(.controlCharacterInString, at: index) }
        guard index < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: bytes.count) }
        // Slow path: unescape into a buffer.
        var buffer = Array(bytes[offset..<index])
        offset = index
        while true {
            guard offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw JSONParseError(.invalidUTF8, at: start)
                }
                return (string, JSONObject.keyTag(of: string))
            case UInt8(ascii: "\\"):
                try parseEscape(into: &buffer)
            case 0..<0x20:
                throw JSONParseError(.controlCharacterInString, at: offset)
            default:
                buffer.append(byte)
                offset += 1
            }
        }
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONParseError) {
        let escapeOffset = offset
        offset += 1  // backslash
        guard offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
        let byte = bytes[offset]
        offset += 1
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
                else { throw JSONParseError(.invalidUnicodeEscape, at: escapeOffset) }
                offset += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(.invalidUnicodeEscape, at: escapeOffset) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONParseError(.invalidUnicodeEscape, at: escapeOffset)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw JSONParseError(.invalidUnicodeEscape, at: escapeOffset) }
            if let encoded = UTF8.encode(unicode) { buffer.append(contentsOf: encoded) }
        default:
            throw JSONParseError(.invalidEscape, at: escapeOffset)
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: bytes.count) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidUnicodeEscape, at: offset)
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = offset
        var isIntegral = true
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
        } else if isDigit(at: offset) {
            while isDigit(at: offset) { offset += 1 }
        } else {
            throw JSONParseError(.invalidNumber, at: start)
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            isIntegral = false
            offset += 1
            guard isDigit(at: offset) else { throw JSONParseError(.invalidNumber, at: start) }
            while isDigit(at: offset) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            isIntegral = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard isDigit(at: offset) else { throw JSONParseError(.invalidNumber, at: start) }
            while isDigit(at: offset) { offset += 1 }
        }
        if isIntegral {
            // Up to 18 digits always fit an `Int`: read from the bytes, without a `String` to parse.
            let isNegative = bytes[start] == UInt8(ascii: "-")
            let digitsStart = isNegative ? start + 1 : start
            if offset - digitsStart <= 18 {
                var value = 0
                for index in digitsStart..<offset { value = value &* 10 &+ Int(bytes[index] &- UInt8(ascii: "0")) }
                return .int(isNegative ? -value : value)
            }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isIntegral, let int = Int(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else { throw JSONParseError(.invalidNumber, at: start) }
        return .double(double)
    }

    // MARK: - Helpers

    private func isDigit(at index: Int) -> Bool {
        index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
    }

    func peek() throws(JSONParseError) -> UInt8 {
        guard offset < bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: offset) }
        return bytes[offset]
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = offset
        let count = literal.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw JSONParseError(.unexpectedEndOfInput, at: bytes.count) }
        let pointer = literal.utf8Start
        for index in 0..<count where bytes[offset + index] != pointer[index] {
            throw JSONParseError(.unexpectedCharacter, at: start + index)
        }
        offset += count
    }

    /// Moves past spaces, tabs and line breaks. Compact JSON (every event) has none: that case is one inlined test.
    @inline(__always)
    mutating func skipWhitespace() {
        guard offset < bytes.count, bytes[offset] <= 0x20 else { return }
        skipWhitespaceRun()
    }

    private mutating func skipWhitespaceRun() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }
}

extension JSONValue {
    /// Parses exactly one JSON value (surrounding whitespace allowed).
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 input.
    ///   - maximumDepth: the nesting limit.
    /// - Throws: ``JSONParseError`` with the byte offset of the problem.
    public init(parsing bytes: some Sequence<UInt8>, maximumDepth: Int = JSONParser.defaultMaximumDepth) throws(JSONParseError) {
        var parser = JSONParser(bytes: Array(bytes), maximumDepth: maximumDepth)
        guard let value = try parser.nextValue() else {
            throw JSONParseError(.unexpectedEndOfInput, at: parser.offset)
        }
        guard parser.isAtEnd else { throw JSONParseError(.trailingData, at: parser.offset) }
        self = value
    }
}
