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

    /// Whether `text` has a `{{` (a placeholder may start there).
    static func containsPlaceholder(_ text: String) -> Bool {
        containsPlaceholder(text.utf8.span)
    }

    /// Whether the UTF-8 text `bytes` has a `{{`. Words of eight bytes without a `{` are skipped whole (a `{{`
    /// cannot start or end in them).
    static func containsPlaceholder(_ bytes: Span<UInt8>) -> Bool {
        var previous: UInt8 = 0
        var index = 0
        while index < bytes.count {
            if index + 8 <= bytes.count, !SWAR.contains(UInt8(ascii: "{"), in: SWAR.load(bytes, at: index)) {
                previous = 0
                index += 8
                continue
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "{"), previous == UInt8(ascii: "{") { return true }
            previous = byte
            index += 1
        }
        return false
    }

    /// Renders `text`; `path` (the field's path, for issues and warnings) is only built when needed.
    func render(_ text: String, at path: @autoclosure () -> FieldPath, into diagnostics: RenderDiagnostics) -> String {
        render(text.utf8.span, text: text, at: path(), into: diagnostics) ?? text
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
        document.withUnescapedBytes(ofStringAt: node) { bytes in
            render(bytes, text: document.string(at: node), at: path(), into: diagnostics)
        }
    }

    /// Renders the UTF-8 text `bytes` (`text` as a `String`, made only for Mustache); `nil` when it has no
    /// placeholder.
    private func render(
        _ bytes: Span<UInt8>,
        text: @autoclosure () -> String,
        at path: @autoclosure () -> FieldPath,
        into diagnostics: RenderDiagnostics
    ) -> String? {
        guard Self.containsPlaceholder(bytes) else { return nil }
        let simple = SimpleTemplate.render(bytes, attributes, scratch: &diagnostics.personalizationScratch) { name in
            diagnostics.warnings.append(
                RenderWarning(path: path(), message: "attribute '\(name)' is not in recipient.attributes; rendered empty")
            )
        }
        if let simple { return simple }
        return renderWithMustache(text(), at: path(), into: diagnostics)
    }

    /// Renders `text` with Mustache, whatever its tags (the general path; tests compare it with
    /// the ``SimpleTemplate`` fast path).
    func renderWithMustache(_ text: String, at path: FieldPath, into diagnostics: RenderDiagnostics) -> String {
        let template: MustacheTemplate
        do {
            template = try MustacheTemplate(string: Self.textPragma + text)
        } catch {
            diagnostics.issues.append(.init(.invalidField, at: path, "invalid {{placeholder}} syntax (\(error))"))
            return text
        }
        let lookup = AttributeLookup(attributes.dictionary)
        let rendered = template.render(lookup)
        for name in lookup.missing {
            diagnostics.warnings.append(
                RenderWarning(path: path, message: "attribute '\(name)' is not in recipient.attributes; rendered empty")
            )
        }
        return rendered
    }
}

/// Fills content strings whose tags are all plain variables, `{{name}}` or `{{{name}}}`, recognised
/// conservatively so that the result is exactly what Mustache gives.
///
/// Anything Mustache could read differently is rejected (and left to Mustache): any other tag kind
/// (`{{#…}}`, `{{! …}}`, `{{> …}}`, `{{= …=}}`, `{{& …}}`), dotted names and transforms, whitespace
/// inside a tag, an unclosed `{{`, a non-ASCII byte next to a tag (it could form one grapheme with a
/// brace, and Mustache parses by `Character`), and text whose first line is blank (Mustache drops a
/// blank line after the standalone `CONTENT_TYPE` pragma we prepend).
enum SimpleTemplate {
    /// `text` with its variables filled from `attributes`, or `nil` when `text` is not simple.
    /// Calls `missing` once per absent name, in order of first use.
    static func render(_ text: String, _ attributes: [String: String], missing: (String) -> Void) -> String? {
        var scratch: [UInt8] = []
        return render(text.utf8.span, .dictionary(attributes), scratch: &scratch, missing: missing)
    }

    /// ``render(_:_:missing:)`` of the UTF-8 text `source`, assembling the text in `scratch` (emptied first; its
    /// capacity is kept for the next).
    ///
    /// One pass over the bytes: text between tags and the values are appended as the tags are found, and the
    /// result is made a `String` once. Tags are ASCII and so is the byte on each side of one, so the pieces join into
    /// valid UTF-8. A text that turns out not to be simple leaves `scratch` with a part of it, and `missing`
    /// uncalled.
    static func render(_ source: Span<UInt8>, _ attributes: AttributeSource, scratch result: inout [UInt8], missing: (String) -> Void) -> String? {
        result.removeAll(keepingCapacity: true)
        // Room for most of the render's strings at once (the buffer is kept for the next one).
        result.reserveCapacity(Swift.max(source.count + 64, 512))
        var absent: [String] = []
        var textStart = 0
        let isSimple = scan(source) { nameRange, tagRange in
            result.append(copying: source.extracting(textStart..<tagRange.lowerBound))
            let name = source.extracting(nameRange)
            if !attributes.appendValue(named: name, to: &result) {
                let text = String(plainASCII: name)
                if !absent.contains(text) { absent.append(text) }
            }
            textStart = tagRange.upperBound
        }
        guard isSimple else { return nil }
        result.append(copying: source.extracting(textStart..<source.count))
        for name in absent { missing(name) }
        return String(decoding: result, as: UTF8.self)
    }

    /// Finds the tags of `bytes`, passing each tag's name and whole range to `tag`; returns `false`
    /// (possibly after some calls) as soon as `bytes` turns out not to be simple.
    private static func scan(_ bytes: Span<UInt8>, tag: (Range<Int>, Range<Int>) -> Void) -> Bool {
        // The first line must not be blank: after any spaces and tabs comes neither a control
        // character nor one of the other characters Swift counts as a newline (U+0085, U+2028, U+2029).
        var first = 0
        while first < bytes.count, bytes[first] == UInt8(ascii: " ") || bytes[first] == UInt8(ascii: "\t") { first += 1 }
        guard first < bytes.count else { return false }
        if bytes[first] < 0x20 || bytes[first] == 0x7F || bytes.has(0xC2, 0x85, at: first) || bytes.has(0xE2, 0x80, 0xA8, at: first)
            || bytes.has(0xE2, 0x80, 0xA9, at: first)
        {
            return false
        }

        let end = bytes.count
        var index = 0
        while index < end - 1 {
            // Eight bytes without a `{` hold no tag's start.
            if index + 8 <= end, !SWAR.contains(UInt8(ascii: "{"), in: SWAR.load(bytes, at: index)) {
                index += 8
                continue
            }
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            // A tag starts at `index`. The byte before it must be ASCII.
            if index > 0, bytes[index - 1] >= 0x80 { return false }
            var nameStart = index + 2
            let isTriple = nameStart < end && bytes[nameStart] == UInt8(ascii: "{")
            if isTriple { nameStart += 1 }
            var nameEnd = nameStart
            while nameEnd < end, isNameByte(bytes[nameEnd]) { nameEnd += 1 }
            guard nameEnd > nameStart else { return false }
            // Closing braces: `}}`, or `}}}` for a triple.
            var close = nameEnd
            for _ in 0..<(isTriple ? 3 : 2) {
                guard close < end, bytes[close] == UInt8(ascii: "}") else { return false }
                close += 1
            }
            // The byte after the tag must be ASCII.
            if close < end, bytes[close] >= 0x80 { return false }
            tag(nameStart..<nameEnd, index..<close)
            index = close
        }
        return true
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
