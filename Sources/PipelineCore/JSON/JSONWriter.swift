/// Writes compact JSON (no insignificant whitespace) as UTF-8 bytes, deterministically.
///
/// - Object keys are written in the ``JSONObject``'s order.
/// - Strings escape `"` and `\`, and control characters below U+0020 (`\n`, `\t`, … or `\u00XX`);
///   everything else, including non-ASCII, is written as UTF-8 unchanged. `/` is not escaped.
/// - Integral numbers (``JSONValue/int(_:)``, or a ``JSONValue/double(_:)`` holding an exact
///   integer below 2^53) are written without a fraction; non-finite doubles as `null`.
///
/// Records of a fixed shape can be written member by member, without building a ``JSONObject``
/// first: ``beginObject()``, ``member(_:_:)`` or ``key(_:)`` followed by one value, ``endObject()``. Arrays
/// stream the same way: ``beginArray()``, ``nextElement()`` before each element, ``endArray()``. Streamed values
/// nest as member values and elements:
///
/// ```swift
/// var items = JSONWriter(reservingCapacity: 512)
/// items.beginArray()
/// for item in list {
///     items.nextElement()
///     items.beginObject()
///     items.member("img", item.image)
///     items.endObject()
/// }
/// items.endArray()                                    // [{"img":"…"},{"img":"…"}]
/// ```
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    /// Whether the next ``key(_:)`` of a streamed object needs a comma before it.
    private var needsComma = false

    /// Creates an empty writer.
    public init(reservingCapacity capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends `value`.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let int): append(String(int))
        case .double(let double): writeDouble(double)
        case .string(let string): write(string: string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            write(object: object)
        }
    }

    /// Starts an object whose members follow one by one.
    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Ends the object started by the matching ``beginObject()``.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Starts an array whose elements follow one by one, each after ``nextElement()``.
    public mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Starts the next element of the array started by ``beginArray()`` (a comma before all but the first);
    /// exactly one value must follow (``write(_:)``, ``write(string:)``, ``beginObject()`` or ``beginArray()``).
    public mutating func nextElement() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// Ends the array started by the matching ``beginArray()``.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Appends the key of the next member of a streamed object; exactly one value must follow (``write(_:)``,
    /// ``write(string:)`` or ``beginObject()``).
    public mutating func key(_ key: String) {
        let utf8 = key.utf8.span
        let comma = needsComma
        needsComma = true
        guard Self.plainPrefixLength(of: utf8) == utf8.count else {
            if comma { bytes.append(UInt8(ascii: ",")) }
            write(stringUTF8: utf8)
            bytes.append(UInt8(ascii: ":"))
            return
        }
        // Nothing to escape (the usual key): comma, quoted key and colon in one go.
        bytes.append(addingCapacity: utf8.count + 4) { output in
            if comma { output.append(UInt8(ascii: ",")) }
            output.append(UInt8(ascii: "\""))
            output.append(copying: utf8)
            output.append(UInt8(ascii: "\""))
            output.append(UInt8(ascii: ":"))
        }
    }

    /// Appends the member `key` with the string `value`, or nothing when `value` is `nil`.
    public mutating func member(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        write(string: value)
    }

    /// A member name prepared once: its JSON text (`"name":`), copied into the output instead of scanned for
    /// escapes and written byte by byte. For records written for every event, whose names are fixed:
    ///
    /// ```swift
    /// static let messageId = JSONWriter.Key("messageId")
    /// writer.member(Self.messageId, id)
    /// ```
    public struct Key: Sendable {
        /// The name.
        public let name: String
        /// `"name":`, escaped as ``key(_:)-(String)`` writes it.
        let text: [UInt8]

        /// Prepares `name`.
        public init(_ name: String) {
            var writer = JSONWriter(reservingCapacity: name.utf8.count + 8)
            writer.write(string: name)
            writer.writeRaw(byte: UInt8(ascii: ":"))
            self.name = name
            self.text = writer.bytes
        }
    }

    /// ``key(_:)-(String)`` with a prepared name.
    public mutating func key(_ key: Key) {
        let comma = needsComma
        needsComma = true
        // Copied from a span: appending the shared array itself would count a reference to it, an atomic operation
        // on memory every thread writing records shares.
        let text = key.text.span
        bytes.append(addingCapacity: text.count &+ 1) { output in
            if comma { output.append(UInt8(ascii: ",")) }
            output.append(copying: text)
        }
    }

    /// Appends the member `key` (prepared) with the string `value`, or nothing when `value` is `nil`. A value with
    /// nothing to escape (the usual) goes in with the name, in one reservation.
    public mutating func member(_ key: Key, _ value: String?) {
        guard let value else { return }
        let utf8 = value.utf8.span
        guard Self.plainPrefixLength(of: utf8) == utf8.count else {
            self.key(key)
            return write(stringUTF8: utf8)
        }
        let comma = needsComma
        needsComma = true
        let text = key.text.span
        bytes.append(addingCapacity: text.count &+ utf8.count &+ 3) { output in
            if comma { output.append(UInt8(ascii: ",")) }
            output.append(copying: text)
            output.append(UInt8(ascii: "\""))
            output.append(copying: utf8)
            output.append(UInt8(ascii: "\""))
        }
    }

    /// ``member(_:timestamp:)-(String,_)`` with a prepared name.
    public mutating func member(_ key: Key, timestamp: Timestamp?) {
        guard let timestamp else { return }
        self.key(key)
        timestamp.appendRFC3339(to: &bytes, quoted: true)
    }

    /// Appends the member `key` with `timestamp` as an RFC 3339 string (``Timestamp/rfc3339``), or nothing when
    /// `timestamp` is `nil`. Written straight into the bytes: no `String` is made for the text.
    public mutating func member(_ key: String, timestamp: Timestamp?) {
        guard let timestamp else { return }
        self.key(key)
        // The text is ASCII with nothing to escape.
        timestamp.appendRFC3339(to: &bytes, quoted: true)
    }

    /// Appends `object`, keys in order.
    public mutating func write(object: JSONObject) {
        bytes.append(UInt8(ascii: "{"))
        var isFirst = true
        for (key, value) in object {
            if !isFirst { bytes.append(UInt8(ascii: ",")) }
            isFirst = false
            write(string: key)
            bytes.append(UInt8(ascii: ":"))
            write(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public mutating func write(string: String) {
        write(stringUTF8: string.utf8.span)
    }

    /// Appends the valid UTF-8 text `utf8` as a quoted, escaped JSON string (without making a `String` of it).
    ///
    /// The bytes that need no escape are found eight at a time (``SWAR``), through the UTF-8 `Span` (safe,
    /// bounds-checked, much faster than iterating `utf8`). A string with nothing to escape (most) is appended whole,
    /// with its quotes, in one go; others run by run.
    mutating func write(stringUTF8 utf8: Span<UInt8>) {
        let plain = Self.plainPrefixLength(of: utf8)
        guard plain < utf8.count else { return write(unescapedStringUTF8: utf8) }
        bytes.append(UInt8(ascii: "\""))
        writeEscaping(utf8, plainPrefix: plain)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `json`, the valid UTF-8 text of a JSON value, as a quoted JSON string: how a nested value is sent
    /// where only strings are allowed (FCM `data`, ``PayloadObject/set(_:jsonText:)-(String,_)``).
    ///
    /// ``write(stringUTF8:)`` gives the same bytes. Such text has a `"` every few bytes, and control characters only
    /// when something other than a `JSONWriter` wrote it (which escapes them): so its escaped size is counted first,
    /// eight bytes at a time, and it is written byte by byte into one reservation. Text with a control character is
    /// written the general way.
    mutating func write(jsonTextAsString json: Span<UInt8>) {
        guard let escapes = Self.quoteAndBackslashCount(inJSONText: json) else { return write(stringUTF8: json) }
        bytes.append(addingCapacity: json.count &+ escapes &+ 2) { output in
            output.append(UInt8(ascii: "\""))
            // Byte by byte: runs between quotes are a few bytes, shorter than a copy's set-up.
            for position in json.indices {
                let byte = json[position]
                if Self.isQuoteOrBackslash(byte) { output.append(UInt8(ascii: "\\")) }
                output.append(byte)
            }
            output.append(UInt8(ascii: "\""))
        }
    }

    /// Makes the JSON text written since `start` a quoted JSON string holding it, in place: the bytes
    /// ``write(jsonTextAsString:)`` writes for that text, without a copy of it made first (a nested value written
    /// straight into a payload, ``PayloadObject/set(_:jsonTextWrittenBy:)-(PayloadObject.MemberName,_)``).
    ///
    /// The text's escaped size is counted first; then, from the last byte to the first, each byte moves towards the
    /// end by one (the opening quote) plus the number of `"` and `\` up to and including it, with a `\` put in front
    /// of each `"` and `\`.
    mutating func quoteWrittenJSONText(from start: Int) {
        let count = bytes.count &- start
        guard let escapes = Self.quoteAndBackslashCount(inJSONText: bytes.span.extracting(start...)) else {
            // A control character: not written by a `JSONWriter`, which escapes them. Written the general way.
            let text = Array(bytes[start...])
            bytes.removeSubrange(start...)
            return write(stringUTF8: text.span)
        }
        bytes.append(contentsOf: repeatElement(0, count: escapes &+ 2))
        var output = bytes.mutableSpan
        var target = output.count &- 1
        output[target] = UInt8(ascii: "\"")
        var source = start &+ count
        // Each byte moves to `target`, which stays after `source`: by one (the opening quote) plus the escapes up to
        // and including that byte. Eight bytes without a `"` or `\` move as one word (read whole before it is
        // written, so the overlap does not matter); a word with one moves byte by byte.
        while source &- start >= 8 {
            let word = SWAR.load(output.span, at: source &- 8)
            if SWAR.quoteAndBackslashBits(word) == 0 {
                target &-= 8
                source &-= 8
                var raw = output.mutableBytes
                raw.storeBytes(of: word.littleEndian, toByteOffset: target, as: UInt64.self)
                continue
            }
            for _ in 0..<8 { Self.moveEscaping(&output, from: &source, to: &target) }
        }
        while source > start { Self.moveEscaping(&output, from: &source, to: &target) }
        output[start] = UInt8(ascii: "\"")
    }

    /// Moves the byte before `source` to before `target`, with a `\` in front of a `"` or `\`, and both indexes to the
    /// moved byte (``quoteWrittenJSONText(from:)``).
    @inline(__always)
    private static func moveEscaping(_ output: inout MutableSpan<UInt8>, from source: inout Int, to target: inout Int) {
        source &-= 1
        let byte = output[source]
        target &-= 1
        output[target] = byte
        if isQuoteOrBackslash(byte) {
            target &-= 1
            output[target] = UInt8(ascii: "\\")
        }
    }

    /// The number of `"` and `\` in `json`, counted eight bytes at a time; `nil` when it has a control character.
    private static func quoteAndBackslashCount(inJSONText json: Span<UInt8>) -> Int? {
        let wholeWords = json.count & ~7
        var escapes = 0
        var index = 0
        while index < wholeWords {
            let word = SWAR.load(json, at: index)
            if SWAR.hasControlCharacter(word) { return nil }
            escapes &+= SWAR.quoteAndBackslashBits(word).nonzeroBitCount
            index &+= 8
        }
        while index < json.count {
            let byte = json[index]
            if byte < 0x20 { return nil }
            if isQuoteOrBackslash(byte) { escapes &+= 1 }
            index &+= 1
        }
        return escapes
    }

    /// Empties the writer, keeping its capacity, as a new writer starts (a writer used again for each payload,
    /// ``RenderScratch``).
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    /// Takes back the bytes written since `start` (a member whose writer declined it,
    /// ``PayloadObject/set(_:jsonWrittenBy:)-(PayloadObject.MemberName,_)``).
    mutating func removeBytes(from start: Int) {
        bytes.removeSubrange(start...)
    }

    /// Forgets where a streamed object or array was (whether a comma is owed), as a new writer starts: for a value
    /// streamed after bytes another writer's rules put there (``PayloadObject``'s members).
    mutating func resetStreaming() {
        needsComma = false
    }

    /// Appends the valid UTF-8 text `utf8` escaped as the inside of a JSON string, without quotes: for a string
    /// written in pieces (a text whose placeholders are filled as it is written,
    /// ``SimpleTemplate/write(_:_:readingFrom:into:)``).
    mutating func write(stringContentsUTF8 utf8: Span<UInt8>) {
        let plain = Self.plainPrefixLength(of: utf8)
        guard plain < utf8.count else { return append(utf8) }
        writeEscaping(utf8, plainPrefix: plain)
    }

    /// Appends `utf8`, whose first `plain` bytes need no escape (and the next does), escaped, without quotes.
    @inline(__always)
    private mutating func writeEscaping(_ utf8: Span<UInt8>, plainPrefix plain: Int) {
        var runStart = 0
        var index = plain
        while true {
            index = Self.plainRunEnd(in: utf8, from: index)  // to the next byte to escape
            guard index < utf8.count else { break }
            append(utf8.extracting(runStart..<index))
            let byte = utf8[index]
            // Two to six bytes: appended one by one (cheaper than a copy's set-up).
            bytes.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            default:
                bytes.append(UInt8(ascii: "u"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            }
            index &+= 1
            runStart = index
        }
        append(utf8.extracting(runStart..<utf8.count))
    }

    /// The number of bytes of `utf8`, from the first, before the first one written escaped (`utf8.count` when none is).
    static func plainPrefixLength(of utf8: Span<UInt8>) -> Int {
        plainRunEnd(in: utf8, from: 0)
    }

    /// The index of the first byte of `utf8` from `start` on that is written escaped (`utf8.count` when none is).
    ///
    /// A word at a time, each loaded from the front of the bytes left (whose length the loop has checked, so the load
    /// needs no bounds test of its own), then the last few bytes one by one.
    @inline(__always)
    static func plainRunEnd(in utf8: Span<UInt8>, from start: Int) -> Int {
        var index = start
        var rest = utf8.extracting(droppingFirst: start)
        while rest.count >= 8 {
            let stops = SWAR.stopBits(SWAR.load(rest, at: 0))
            if stops != 0 { return index &+ stops.trailingZeroBitCount >> 3 }
            index &+= 8
            rest = rest.extracting(droppingFirst: 8)
        }
        while index < utf8.count, !needsEscape(utf8[index]) { index &+= 1 }
        return index
    }

    /// Appends the UTF-8 text `utf8`, which has nothing to escape (no `"`, `\` or control character: a JSON string's
    /// text that was written without escapes), quoted, as it is: one reservation for the quotes and the text.
    mutating func write(unescapedStringUTF8 utf8: Span<UInt8>) {
        bytes.append(addingCapacity: utf8.count &+ 2) { output in
            output.append(UInt8(ascii: "\""))
            output.append(copying: utf8)
            output.append(UInt8(ascii: "\""))
        }
    }

    /// Whether `byte` is written escaped: `"`, `\` and control characters.
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || isQuoteOrBackslash(byte)
    }

    /// Whether `byte` is `"` or `\`.
    @inline(__always)
    private static func isQuoteOrBackslash(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Appends `text` as is: for fixed, already valid JSON fragments such as `{"message":`.
    mutating func writeRaw(_ text: String) {
        append(text)
    }

    /// Appends one byte as is: a separator or bracket (`,`, `:`, `{`, …).
    mutating func writeRaw(byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends `bytes` as they are: for members already written by another writer (``PayloadObject``).
    mutating func append(bytes more: [UInt8]) {
        bytes.append(contentsOf: more)
    }

    /// Appends `bytes` as they are, copied from a span: for short shared fragments (a prepared member name), where
    /// appending an array would count a reference to it.
    mutating func append(copying bytes: Span<UInt8>) {
        self.bytes.append(copying: bytes)
    }

    /// Inserts `prefix` before the bytes written so far, moving them in place when the capacity allows (an object's
    /// bytes becoming a payload's, ``PayloadObject/embed(after:then:)``).
    mutating func insert(prefix: [UInt8]) {
        bytes.insert(contentsOf: prefix, at: 0)
    }

    /// Replaces the bytes in `range` (a value being set again, ``PayloadObject``).
    mutating func replaceSubrange(_ range: Range<Int>, with replacement: [UInt8]) {
        bytes.replaceSubrange(range, with: replacement)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func writeDouble(_ double: Double) {
        guard double.isFinite else { return append("null") }
        if double == double.rounded(), abs(double) < 9_007_199_254_740_992 {
            append(String(Int64(double)))
        } else {
            append(double.description)
        }
    }

    private mutating func append(_ text: String) {
        append(text.utf8.span)
    }

    private mutating func append(_ utf8: Span<UInt8>) {
        bytes.append(copying: utf8)
    }
}

extension Array where Element == UInt8 {
    /// Appends `bytes` into capacity reserved once (see ``Swift/OutputSpan/append(copying:)``).
    @inline(__always)
    mutating func append(copying bytes: Span<UInt8>) {
        append(addingCapacity: bytes.count) { $0.append(copying: bytes) }
    }
}

extension OutputSpan where Element == UInt8 {
    /// Appends `source`, which must fit in the free capacity. Short runs byte by byte; longer ones zeroed, then
    /// stored eight bytes at a time through a bounds-checked raw span, the last word overlapping bytes already
    /// copied (this toolchain's spans have no safe bulk copy, and byte by byte costs about five instructions a byte).
    @inline(__always)
    mutating func append(copying source: Span<UInt8>) {
        let count = source.count
        guard count >= 8 else {
            var offset = 0
            while offset < count {
                append(source[offset])
                offset &+= 1
            }
            return
        }
        let start = self.count
        append(repeating: 0, count: count)
        var elements = mutableSpan
        var target = MutableRawSpan(_elements: &elements)
        var offset = 0
        while offset &+ 8 <= count {
            target.storeBytes(of: SWAR.load(source, at: offset), toByteOffset: start &+ offset, as: UInt64.self)
            offset &+= 8
        }
        if offset < count {
            target.storeBytes(of: SWAR.load(source, at: count &- 8), toByteOffset: start &+ count &- 8, as: UInt64.self)
        }
    }
}
