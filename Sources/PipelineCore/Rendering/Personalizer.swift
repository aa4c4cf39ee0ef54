import Mustache

/// Fills `{{name}}` placeholders in content strings from `recipient.attributes` with Mustache.
///
/// - Only strings containing `{{` are compiled; everything else is returned as is.
/// - Output is not HTML-escaped: each template is compiled with the `TEXT` content type, so
///   `{{name}}` and `{{{name}}}` both insert the attribute verbatim.
/// - A missing attribute renders empty and adds a warning naming the field and the attribute.
/// - A string that is not valid Mustache is an ``PipelineError/Code/invalidField`` issue.
///
/// Strings whose only tags are plain variables (``SimpleTemplate``, the common case) are filled
/// without Mustache: compiling a Mustache template per string was most of the render cost. Every
/// other string still goes through Mustache, so the output is the same either way.
struct Personalizer: Sendable {
    let attributes: AttributeSource

    /// A personalizer filling placeholders from `attributes`.
    init(attributes: AttributeSource) {
        self.attributes = attributes
    }

    /// A personalizer filling placeholders from the dictionary `attributes`.
    init(attributes: [String: String]) {
        self.attributes = .dictionary(attributes)
    }

    /// The Mustache pragma that turns HTML escaping off for one template.
    private static let textPragma = "{{% CONTENT_TYPE: TEXT}}"

    /// Renders `text`; `path` (the field's path, for issues and warnings) is only built when needed.
    func render(_ text: String, at path: @autoclosure () -> FieldPath, into diagnostics: RenderDiagnostics) -> String {
        render(text.utf8.span, text: text, readingFrom: diagnostics.document, at: path(), into: diagnostics) ?? text
    }

    /// Renders the string at `node` of `document`, which has no escapes, from its bytes; `nil` when it has no
    /// placeholder (its text is the document's, unchanged). No `String` is made for a text left unchanged, nor for
    /// one that only has plain variables.
    func render(
        unescapedStringAt node: Int,
        of document: JSONDocument,
        at path: @autoclosure () -> FieldPath,
        into diagnostics: RenderDiagnostics
    ) -> String? {
        // The bytes read here rather than in a closure of `withUnescapedBytes`, which would copy this personalizer
        // (its attributes hold their document: a reference count each time).
        let bytes = document.bytes
        return render(
            bytes.span.extracting(document.unescapedRange(ofStringAt: node)),
            text: document.string(at: node),
            readingFrom: document,
            at: path(),
            into: diagnostics
        )
    }

    /// Renders the UTF-8 text `bytes` (`text` as a `String`, made only for Mustache), a text of `readDocument`; `nil`
    /// when it has no placeholder.
    private func render(
        _ bytes: Span<UInt8>,
        text: @autoclosure () -> String,
        readingFrom readDocument: JSONDocument,
        at path: @autoclosure () -> FieldPath,
        into diagnostics: RenderDiagnostics
    ) -> String? {
        let filled = SimpleTemplate.fill(bytes, attributes, readingFrom: readDocument, scratch: &diagnostics.personalizationScratch) { name in
            diagnostics.record(Self.missingAttribute(name, at: path()))
        }
        switch filled {
        case .noPlaceholder: return nil
        case .filled(let text): return text
        case .notSimple: return renderWithMustache(text(), at: path(), into: diagnostics)
        }
    }

    /// Renders `text` with Mustache, whatever its tags (the general path; tests compare it with
    /// the ``SimpleTemplate`` fast path).
    func renderWithMustache(_ text: String, at path: FieldPath, into diagnostics: RenderDiagnostics) -> String {
        // Mustache drops a `{{` that ends the text without a word of complaint (`Save {{` gives `Save `), where a
        // tag left open before the end is an error. (After a change of delimiters, `{{` can be plain text.)
        if !text.contains("{{="), let unclosed = Self.unclosedTagOffset(text) {
            diagnostics.record(.init(.invalidField, at: path, "invalid {{placeholder}} syntax: the {{ at character \(unclosed + 1) is not closed with }}"))
            return text
        }
        let template: MustacheTemplate
        // The pragma stands alone on its line when the text's first line is blank, and Mustache drops a
        // standalone tag's line: a line of its own keeps the text's first line.
        let pragmaHasItsLine = !SimpleTemplate.firstLineIsNotBlank(text.utf8.span)
        // Mustache drops a last line of only spaces and tabs (`x\n  ` gives `x\n`), though no tag stands on it: the
        // line is kept aside and put back after the rendering.
        let (body, blankLastLine) = Self.splittingBlankLastLine(text)
        do {
            template = try MustacheTemplate(string: Self.textPragma + (pragmaHasItsLine ? "\n" : "") + body)
        } catch {
            diagnostics.record(.init(.invalidField, at: path, "invalid {{placeholder}} syntax: \(Self.describe(error, in: text, pragmaHasItsLine: pragmaHasItsLine))"))
            return text
        }
        let lookup = AttributeLookup(attributes.dictionary(readingFrom: diagnostics.document))
        let rendered = template.render(lookup)
        for name in lookup.missing {
            diagnostics.record(Self.missingAttribute(name, at: path))
        }
        return rendered + blankLastLine
    }

    /// `text` without its last line when that line is only spaces and tabs (after a line break, which stays), and
    /// that line; the whole text and `""` otherwise.
    static func splittingBlankLastLine(_ text: String) -> (body: Substring, blankLastLine: Substring) {
        var start = text.endIndex
        while start > text.startIndex {
            let previous = text.index(before: start)
            let character = text[previous]
            if character == " " || character == "\t" {
                start = previous
            } else if character.isNewline, start < text.endIndex {
                return (text[..<start], text[start...])
            } else {
                break
            }
        }
        return (text[...], "")
    }

    /// The offset (in characters) of the last `{{` of `text` when no `}}` follows it.
    static func unclosedTagOffset(_ text: String) -> Int? {
        var lastOpening: Int?
        var previous: Character?
        for (offset, character) in text.enumerated() {
            if previous == "{", character == "{" {
                lastOpening = offset - 1
                previous = nil
                continue
            }
            if previous == "}", character == "}" { lastOpening = nil }
            previous = character
        }
        return lastOpening
    }

    /// A Mustache parse error for people: why, and where in the text (its line and column, without the pragma put in
    /// front of it).
    static func describe(_ error: any Error, in text: String, pragmaHasItsLine: Bool) -> String {
        guard let parserError = error as? MustacheTemplate.ParserError else { return "\(error)" }
        let why =
            switch parserError.error {
            case MustacheTemplate.Error.sectionCloseNameIncorrect: "a section is closed with another name than it was opened with"
            case MustacheTemplate.Error.expectedSectionEnd: "a section ({{#name}} or {{^name}}) is not closed ({{/name}})"
            case MustacheTemplate.Error.unfinishedName: "a tag's name is not finished"
            case MustacheTemplate.Error.invalidSetDelimiter: "a delimiter change ({{=<% %>=}}) is malformed"
            case MustacheTemplate.Error.invalidConfigVariableSyntax, MustacheTemplate.Error.unrecognisedConfigVariable:
                "a {{% … }} setting is not one Mustache knows"
            case let other where "\(other)" == "overflow": "a tag is not closed"
            case let other: "\(other)"
            }
        var (line, column) = (parserError.context.lineNumber, parserError.context.columnNumber)
        if pragmaHasItsLine {
            line -= 1
        } else if line == 1 {
            column -= textPragma.count
        }
        // Mustache counts lines at any line break but columns only from a `\n`: after another break (`\r\n`, U+2028)
        // its column is not the line's.
        let breaks = text.filter(\.isNewline)
        guard line == 1 || breaks.allSatisfy({ $0 == "\n" }) else { return "\(why) (line \(line))" }
        return "\(why) (line \(line), column \(column))"
    }

    /// Measures the string at `node` of `document`, which has no escapes, for filling as it is written into a payload
    /// (``SimpleTemplate/measure(_:_:readingFrom:absent:)``), with a warning for each absent attribute of a simple
    /// text.
    func measure(
        unescapedStringAt node: Int,
        of document: JSONDocument,
        at path: @autoclosure () -> FieldPath,
        into diagnostics: RenderDiagnostics
    ) -> SimpleTemplate.Measured {
        var absent: [String] = []
        let measured = document.measureSimpleTemplate(ofStringAt: node, from: attributes, absent: &absent)
        if case .simple = measured {
            for name in absent { diagnostics.record(Self.missingAttribute(name, at: path())) }
        }
        return measured
    }

    /// The warning for a placeholder whose attribute the recipient does not have.
    private static func missingAttribute(_ name: String, at path: FieldPath) -> RenderWarning {
        RenderWarning(path: path, message: "attribute '\(name)' is not in recipient.attributes; rendered empty")
    }
}

/// Fills content strings whose tags are all plain variables, `{{name}}` or `{{{name}}}`, recognised
/// conservatively so that the result is exactly what Mustache gives.
///
/// Anything Mustache could read differently is rejected (and left to Mustache): any other tag kind
/// (`{{#…}}`, `{{! …}}`, `{{> …}}`, `{{= …=}}`, `{{& …}}`), dotted names and transforms, whitespace
/// inside a tag, an unclosed `{{`, a non-ASCII byte next to a tag (it could form one grapheme with a
/// brace, and Mustache parses by `Character`), and text whose first line is blank (the personalizer puts the
/// `CONTENT_TYPE` pragma on a line of its own before it, which Mustache drops).
enum SimpleTemplate {
    /// What ``fill(_:_:readingFrom:scratch:missing:)`` made of a text.
    enum Filled {
        /// The text has no `{{`: it is its own rendering.
        case noPlaceholder
        /// The text with its variables filled.
        case filled(String)
        /// The text has a `{{` but is not simple: Mustache renders it.
        case notSimple
    }

    /// What ``TagScanner`` found: no `{{`, only simple tags (each passed on), or a text for Mustache.
    enum Scan: Equatable {
        case noPlaceholder, simple, notSimple
    }

    /// `text` with its variables filled from `attributes` (`text` itself when it has no `{{`), or `nil` when `text`
    /// is not simple. Calls `missing` once per absent name, in order of first use.
    static func render(_ text: String, _ attributes: [String: String], missing: (String) -> Void) -> String? {
        var scratch: [UInt8] = []
        switch fill(text.utf8.span, .dictionary(attributes), readingFrom: nil, scratch: &scratch, missing: missing) {
        case .noPlaceholder: return text
        case .filled(let filled): return filled
        case .notSimple: return nil
        }
    }

    /// ``render(_:_:missing:)`` of the UTF-8 text `source`, assembling the text in `scratch` (emptied at the first
    /// tag, untouched when there is none; its capacity is kept for the next).
    ///
    /// One pass over the bytes, which also finds whether there is a placeholder at all: text between tags and the
    /// values are appended as the tags are found, and the result is made a `String` once. Tags are ASCII and so is
    /// the byte on each side of one, so the pieces join into valid UTF-8. A text that turns out not to be simple
    /// leaves `scratch` with a part of it, and `missing` uncalled.
    static func fill(
        _ source: Span<UInt8>,
        _ attributes: AttributeSource,
        readingFrom readDocument: JSONDocument?,
        scratch result: inout [UInt8],
        missing: (String) -> Void
    ) -> Filled {
        var absent: [String] = []
        var textStart = 0
        var isFirstTag = true
        var scanner = TagScanner()
        while let (nameRange, tagRange) = scanner.next(in: source) {
            if isFirstTag {
                isFirstTag = false
                result.removeAll(keepingCapacity: true)
                // Room for most of the render's strings at once (the buffer is kept for the next one).
                result.reserveCapacity(Swift.max(source.count + 64, 512))
            }
            result.append(copying: source.extracting(textStart..<tagRange.lowerBound))
            let name = source.extracting(nameRange)
            if !attributes.appendValue(named: name, readingFrom: readDocument, to: &result) {
                let text = String(plainASCII: name)
                if !absent.contains(text) { absent.append(text) }
            }
            textStart = tagRange.upperBound
        }
        switch scanner.result {
        case .noPlaceholder: return .noPlaceholder
        case .notSimple: return .notSimple
        case .simple:
            result.append(copying: source.extracting(textStart..<source.count))
            for name in absent { missing(name) }
            return .filled(String(decoding: result, as: UTF8.self))
        }
    }

    /// What ``measure(_:_:readingFrom:absent:)`` found in a text.
    enum Measured: Equatable {
        /// The text has no `{{`: it is its own rendering.
        case noPlaceholder
        /// The text has only plain variables; filled, it is `filledCount` UTF-8 bytes long.
        case simple(filledCount: Int)
        /// The text has a `{{` but is not simple: Mustache renders it.
        case notSimple
    }

    /// Whether `source` is simple and how long it is once its variables are filled from `attributes`, without
    /// filling it: a text that is written into a payload is filled as it is written
    /// (``write(_:_:readingFrom:into:)``), with no `String` or copy made for it. Appends to `absent` the names of absent attributes, once each, in order of first
    /// use (for a text that is not simple, a part of them).
    static func measure(_ source: Span<UInt8>, _ attributes: AttributeSource, readingFrom readDocument: JSONDocument?, absent: inout [String]) -> Measured {
        var filledCount = source.count
        var scanner = TagScanner()
        while let (nameRange, tagRange) = scanner.next(in: source) {
            filledCount &-= tagRange.count
            if let valueCount = attributes.valueByteCount(named: source.extracting(nameRange), readingFrom: readDocument) {
                filledCount &+= valueCount
            } else {
                let text = String(plainASCII: source.extracting(nameRange))
                if !absent.contains(text) { absent.append(text) }
            }
        }
        switch scanner.result {
        case .noPlaceholder: return .noPlaceholder
        case .notSimple: return .notSimple
        case .simple:
            return .simple(filledCount: filledCount)
        }
    }

    /// Writes `source`, a simple text (``measure(_:_:readingFrom:absent:)``) without escapes (a string node written
    /// without them: no byte of it needs one), as a quoted JSON string with its variables filled from `attributes`: the text
    /// around the tags copied as it is, each value escaped as needed, an absent one as nothing. The same bytes as
    /// writing the `String` that ``fill(_:_:readingFrom:scratch:missing:)`` makes.
    static func write(_ source: Span<UInt8>, _ attributes: AttributeSource, readingFrom readDocument: JSONDocument?, into writer: inout JSONWriter) {
        writer.writeRaw(byte: UInt8(ascii: "\""))
        var textStart = 0
        var scanner = TagScanner()
        while let (nameRange, tagRange) = scanner.next(in: source) {
            writer.append(copying: source.extracting(textStart..<tagRange.lowerBound))
            attributes.writeValue(named: source.extracting(nameRange), readingFrom: readDocument, into: &writer)
            textStart = tagRange.upperBound
        }
        assert(scanner.result == .simple, "SimpleTemplate.write of a text that is not simple")
        writer.append(copying: source.extracting(textStart..<source.count))
        writer.writeRaw(byte: UInt8(ascii: "\""))
    }

    /// The string at `node` of `document` (no escapes, only simple placeholders) with its variables filled from
    /// `attributes`, as a `String`.
    static func filledString(ofStringAt node: Int, of document: JSONDocument, from attributes: AttributeSource) -> String {
        let bytes = document.bytes  // a local: a span of a class's stored property cannot outlive the property access
        var scratch: [UInt8] = []
        switch fill(bytes.span.extracting(document.unescapedRange(ofStringAt: node)), attributes, readingFrom: document, scratch: &scratch, missing: { _ in }) {
        case .filled(let text): return text
        case .noPlaceholder, .notSimple: return document.string(at: node)  // never measured as simple
        }
    }

    /// ``write(_:_:readingFrom:into:)`` of the string at `node` of `document` (no escapes, only simple placeholders).
    static func write(stringAt node: Int, of document: JSONDocument, from attributes: AttributeSource, into writer: inout JSONWriter) {
        let bytes = document.bytes  // a local: a span of a class's stored property cannot outlive the property access
        write(bytes.span.extracting(document.unescapedRange(ofStringAt: node)), attributes, readingFrom: document, into: &writer)
    }

    /// Finds the tags of a text one at a time (``Scan/noPlaceholder`` when it has no `{{`, ``Scan/notSimple`` as soon
    /// as it turns out not to be simple), for loops that use each tag at once: `fill`, `measure` and `write` take
    /// their tags from a scanner rather than through a closure, whose context would copy the attributes it captures
    /// (a reference count each way per personalized text).
    struct TagScanner {
        /// Where the search goes on.
        private var index = 0
        /// Whether a tag was found.
        private var hasTag = false
        /// Whether the text turned out not to be simple (the scan is then over).
        private var isNotSimple = false

        /// What the tags found so far make of the text; once ``next(in:)`` returned `nil`, of the whole text.
        var result: Scan {
            isNotSimple ? .notSimple : hasTag ? .simple : .noPlaceholder
        }

        /// The next tag of `bytes` (the same bytes at every call): its name's range and its whole range; `nil` at the
        /// end, or as soon as the text turns out not to be simple (``result``).
        mutating func next(in bytes: Span<UInt8>) -> (name: Range<Int>, tag: Range<Int>)? {
            let end = bytes.count
            while !isNotSimple, index < end - 1 {
                // Eight bytes without a `{` hold no tag's start.
                if index + 8 <= end, !SWAR.contains(UInt8(ascii: "{"), in: SWAR.load(bytes, at: index)) {
                    index += 8
                    continue
                }
                guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                    index += 1
                    continue
                }
                guard let found = Self.tag(at: index, in: bytes, isFirst: !hasTag) else {
                    isNotSimple = true
                    return nil
                }
                hasTag = true
                index = found.tag.upperBound
                return found
            }
            return nil
        }

        /// The tag that starts with the `{{` at `start`; `nil` when it makes the text not simple. The text must not
        /// start with a blank line (checked at its first tag), and the bytes on both sides of a tag must be ASCII.
        private static func tag(at start: Int, in bytes: Span<UInt8>, isFirst: Bool) -> (name: Range<Int>, tag: Range<Int>)? {
            let end = bytes.count
            if isFirst, !SimpleTemplate.firstLineIsNotBlank(bytes) { return nil }
            if start > 0, bytes[start - 1] >= 0x80 { return nil }
            var nameStart = start + 2
            let isTriple = nameStart < end && bytes[nameStart] == UInt8(ascii: "{")
            if isTriple { nameStart += 1 }
            var nameEnd = nameStart
            while nameEnd < end, SimpleTemplate.isNameByte(bytes[nameEnd]) { nameEnd += 1 }
            guard nameEnd > nameStart else { return nil }
            // Closing braces: `}}`, or `}}}` for a triple.
            var close = nameEnd
            for _ in 0..<(isTriple ? 3 : 2) {
                guard close < end, bytes[close] == UInt8(ascii: "}") else { return nil }
                close += 1
            }
            // The byte after the tag must be ASCII.
            if close < end, bytes[close] >= 0x80 { return nil }
            return (nameStart..<nameEnd, start..<close)
        }
    }

    /// Whether the text's first line is not blank: after any spaces and tabs comes neither a control character nor
    /// one of the other characters Swift counts as a newline (U+0085, U+2028, U+2029). Behind a blank one, the pragma
    /// the personalizer puts first would stand alone on its line, which Mustache drops.
    static func firstLineIsNotBlank(_ bytes: Span<UInt8>) -> Bool {
        var first = 0
        while first < bytes.count, bytes[first] == UInt8(ascii: " ") || bytes[first] == UInt8(ascii: "\t") { first += 1 }
        guard first < bytes.count else { return false }
        return !(bytes[first] < 0x20 || bytes[first] == 0x7F || bytes.has(0xC2, 0x85, at: first) || bytes.has(0xE2, 0x80, 0xA8, at: first)
            || bytes.has(0xE2, 0x80, 0xA9, at: first))
    }

    /// Letters, digits, `_` and `-`: name bytes Mustache reads as one plain (undotted) name.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}

extension Span<UInt8> {
    /// Whether the bytes at `offset` are `a`, `b` (and `c`, when given).
    fileprivate func has(_ a: UInt8, _ b: UInt8, _ c: UInt8? = nil, at offset: Int) -> Bool {
        guard offset + 1 < count, self[offset] == a, self[offset + 1] == b else { return false }
        guard let c else { return true }
        return offset + 2 < count && self[offset + 2] == c
    }
}

/// The Mustache context object: answers lookups from the attributes and remembers misses.
private final class AttributeLookup: MustacheParent, CustomStringConvertible {
    let attributes: [String: String]
    private(set) var missing: [String] = []

    init(_ attributes: [String: String]) {
        self.attributes = attributes
    }

    func child(named name: String) -> Any? {
        if let value = attributes[name] { return value }
        if !missing.contains(name) { missing.append(name) }
        return nil
    }

    /// What `{{.}}` renders: nothing.
    var description: String { "" }
}

extension JSONDocument {
    /// ``SimpleTemplate/measure(_:_:readingFrom:absent:)`` of the string at `node`, which has no escapes, with the
    /// attributes in the read document looked up in this one: a document's method reads its bytes without counting a
    /// reference to them, where a caller's copy of ``bytes`` counts one each way.
    func measureSimpleTemplate(ofStringAt node: Int, from attributes: AttributeSource, absent: inout [String]) -> SimpleTemplate.Measured {
        let bytes = self.bytes  // a local: a span of a class's stored property cannot outlive the property access
        return SimpleTemplate.measure(bytes.span.extracting(unescapedRange(ofStringAt: node)), attributes, readingFrom: self, absent: &absent)
    }
}
