import Mustache

/// Fills `{{name}}` placeholders in content strings from `recipient.attributes` with Mustache.
///
/// - Only strings containing `{{` are compiled; everything else is returned as is.
/// - Output is not HTML-escaped: each template is compiled with the `TEXT` content type, so
///   `{{name}}` and `{{{name}}}` both insert the attribute verbatim.
/// - A missing attribute renders empty and adds a warning naming the field and the attribute.
/// - A string that is not valid Mustache is an ``PipelineError/Code/invalidField`` issue.
struct Personalizer: Sendable {
    let attributes: [String: String]

    /// The Mustache pragma that turns HTML escaping off for one template.
    private static let textPragma = "{{% CONTENT_TYPE: TEXT}}"

    static func containsPlaceholder(_ text: String) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "{"), previous == UInt8(ascii: "{") { return true }
            previous = byte
        }
        return false
    }

    func render(_ text: String, at path: FieldPath, into diagnostics: RenderDiagnostics) -> String {
        guard Self.containsPlaceholder(text) else { return text }
        let template: MustacheTemplate
        do {
            template = try MustacheTemplate(string: Self.textPragma + text)
        } catch {
            diagnostics.issues.append(.init(.invalidField, at: path, "invalid {{placeholder}} syntax (\(error))"))
            return text
        }
        let lookup = AttributeLookup(attributes)
        let rendered = template.render(lookup)
        for name in lookup.missing {
            diagnostics.warnings.append(
                RenderWarning(path: path, message: "attribute '\(name)' is not in recipient.attributes; rendered empty")
            )
        }
        return rendered
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
