/// Reads the fields of one JSON object with type checks, collecting every problem with its path.
///
/// Template plugins read their content through a reader (``RenderInput/content``): each accessor
/// returns the value or `nil`, and records an issue when a required field is missing (`required`)
/// or a field has the wrong type or value. Nothing throws while reading, so a renderer sees and
/// reports *all* problems; the registry fails the event afterwards if any issue was recorded.
///
/// `null` counts as absent. Content strings are personalized (`{{name}}`) when read with
/// ``string(_:required:personalize:)``. Keys a renderer never reads are reported as warnings
/// ("unknown field; ignored"), so read every field you support regardless of the platform.
///
/// A reader belongs to one render call and must not be kept after it.
public final class FieldReader {
    /// Where the object being read is, relative to ``parent``: kept as a step, so that the
    /// ``path`` array is only built when an issue or warning needs it.
    private enum Location {
        /// A top-level reader.
        case root(FieldPath)
        /// The object at member `key` of the parent.
        case member(key: String)
        /// The object at `key[index]` of the parent.
        case element(key: String, index: Int)
    }

    private let location: Location
    /// The reader this one was made by (`nil` for a root). `unowned`: the parent keeps its children
    /// (for ``warnAboutUnreadKeys(template:)``) and outlives them during a render.
    private unowned let parent: FieldReader?

    /// The path of the object being read.
    public var path: FieldPath {
        switch (location, parent) {
        case (.root(let path), _): path
        case (.member(let key), let parent?): parent.path.appending(key)
        case (.element(let key, let index), let parent?): parent.path.appending(key).appending(index: index)
        case (.member, nil), (.element, nil): preconditionFailure("a child reader always has a parent")
        }
    }

    /// The object being read.
    public let object: JSONObject
    let diagnostics: RenderDiagnostics
    /// Which members were read, as bits by position (the first 64 members; content objects are
    /// much smaller, so this usually avoids allocating a flag array per object).
    private var readMask: UInt64 = 0
    /// Read flags of the members after the first 64 (empty for smaller objects).
    private var overflowReadFlags: [Bool]
    private var children: [FieldReader] = []

    convenience init(_ object: JSONObject, path: FieldPath, diagnostics: RenderDiagnostics) {
        self.init(object, location: .root(path), parent: nil, diagnostics: diagnostics)
    }

    private init(_ object: JSONObject, location: Location, parent: FieldReader?, diagnostics: RenderDiagnostics) {
        self.object = object
        self.location = location
        self.parent = parent
        self.diagnostics = diagnostics
        self.overflowReadFlags = object.count > 64 ? Array(repeating: false, count: object.count - 64) : []
    }

    // MARK: - Raw access

    /// The value of `key` (`nil` when absent or `null`); marks the key as read.
    public func value(_ key: String) -> JSONValue? {
        guard let index = object.index(of: key) else { return nil }
        markRead(index)
        let value = object.member(at: index).value
        if case .null = value { return nil }
        return value
    }

    /// Whether `key` is present and not `null`; marks the key as read.
    public func contains(_ key: String) -> Bool {
        value(key) != nil
    }

    /// Marks keys as read without validating them (fields a renderer deliberately ignores).
    public func ignore(_ keys: String...) {
        for key in keys { _ = value(key) }
    }

    // MARK: - Typed access

    /// A string field. Required strings must also be non-empty.
    ///
    /// - Parameters:
    ///   - key: the member name.
    ///   - required: record `required` when absent.
    ///   - personalize: fill `{{name}}` placeholders from the recipient's attributes.
    public func string(_ key: String, required: Bool = false, personalize: Bool = true) -> String? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .string(let text) = value else { return typeMismatch(key, "a string", value) }
        if required, text.isEmpty {
            addIssue(.invalidField, key, "must not be empty")
            return nil
        }
        guard personalize, let personalizer = diagnostics.personalizer else { return text }
        return personalizer.render(text, at: path.appending(key), into: diagnostics)
    }

    /// An integer field (a JSON number without fraction).
    public func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int>? = nil) -> Int? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .int(let int) = value else { return typeMismatch(key, "an integer", value) }
        if let range, !range.contains(int) {
            addIssue(.invalidField, key, "must be between \(range.lowerBound) and \(range.upperBound), found \(int)")
            return nil
        }
        return int
    }

    /// A boolean field.
    public func boolean(_ key: String, required: Bool = false) -> Bool? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .bool(let flag) = value else { return typeMismatch(key, "a boolean", value) }
        return flag
    }

    /// An RFC 3339 date-time string field.
    public func timestamp(_ key: String, required: Bool = false) -> Timestamp? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .string(let text) = value else { return typeMismatch(key, "an RFC 3339 date-time string", value) }
        do throws(RFC3339Error) {
            return try Timestamp(rfc3339: text)
        } catch {
            addIssue(.invalidField, key, error.reason)
            return nil
        }
    }

    /// A string field whose value must be one of `allowed` (compared exactly, case-sensitive).
    public func choice(_ key: String, from allowed: [String], required: Bool = false) -> String? {
        guard let text = string(key, required: required, personalize: false) else { return nil }
        guard allowed.contains(text) else {
            addIssue(.invalidField, key, "must be one of \(allowed.joined(separator: ", ")), found '\(text)'")
            return nil
        }
        return text
    }

    /// A colour: six hex digits, optionally after a `#`. Returns the six digits without `#`
    /// (the Android SDK prepends its own `#` and drops a colour that already has one).
    public func color(_ key: String, required: Bool = false) -> String? {
        guard let text = string(key, required: required, personalize: false) else { return nil }
        guard let normalized = HexColor.normalize(text) else {
            addIssue(.invalidField, key, "must be six hex digits like 00FF00 (optionally after '#'), found '\(text)'")
            return nil
        }
        return normalized
    }

    /// A nested object, as a reader for its fields.
    public func object(_ key: String, required: Bool = false) -> FieldReader? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .object(let object) = value else { return typeMismatch(key, "an object", value) }
        return child(object, at: .member(key: key))
    }

    /// An array of objects, as readers for each element. Non-object elements are issues.
    public func objects(_ key: String, required: Bool = false) -> [FieldReader]? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .array(let elements) = value else { return typeMismatch(key, "an array", value) }
        var readers: [FieldReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard case .object(let object) = element else {
                diagnostics.issues.append(
                    .init(.invalidField, at: path.appending(key).appending(index: index), "expected an object, found \(element.typeDescription)")
                )
                continue
            }
            readers.append(child(object, at: .element(key: key, index: index)))
        }
        return readers
    }

    /// An object whose values must all be strings (a string map), in order. Not personalized.
    public func stringMap(_ key: String, required: Bool = false) -> JSONObject? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .object(let object) = value else { return typeMismatch(key, "an object of strings", value) }
        var isValid = true
        for (member, memberValue) in object {
            if case .string = memberValue { continue }
            isValid = false
            diagnostics.issues.append(
                .init(.invalidField, at: path.appending(key).appending(member), "expected a string, found \(memberValue.typeDescription)")
            )
        }
        return isValid ? object : nil
    }

    // MARK: - Reporting

    /// Records an issue for `key` (or for this object when `key` is `nil`).
    public func addIssue(_ code: PipelineError.Code, _ key: String?, _ reason: String) {
        diagnostics.issues.append(.init(code, at: key.map(path.appending) ?? path, reason))
    }

    /// Records an issue at an arbitrary path (e.g. a nested field of an absent object).
    public func addIssue(_ code: PipelineError.Code, at path: FieldPath, _ reason: String) {
        diagnostics.issues.append(.init(code, at: path, reason))
    }

    /// Records a warning for `key` (or for this object when `key` is `nil`).
    public func addWarning(_ key: String?, _ message: String) {
        diagnostics.warnings.append(RenderWarning(path: key.map(path.appending) ?? path, message: message))
    }

    /// The path of member `key`.
    public func path(of key: String) -> FieldPath {
        path.appending(key)
    }

    /// Adds a warning for every key of this object and its read children that nobody read.
    func warnAboutUnreadKeys(template: String) {
        for (index, (key, _)) in object.enumerated() where !wasRead(index) {
            addWarning(key, "not a field of template '\(template)'; ignored")
        }
        for child in children { child.warnAboutUnreadKeys(template: template) }
    }

    // MARK: - Private

    private func markRead(_ index: Int) {
        if index < 64 {
            readMask |= 1 << UInt64(index)
        } else {
            overflowReadFlags[index - 64] = true
        }
    }

    private func wasRead(_ index: Int) -> Bool {
        index < 64 ? readMask & (1 << UInt64(index)) != 0 : overflowReadFlags[index - 64]
    }

    private func fetch(_ key: String, required: Bool) -> JSONValue? {
        guard let value = value(key) else {
            if required { addIssue(.missingField, key, "required") }
            return nil
        }
        return value
    }

    private func typeMismatch<T>(_ key: String, _ expected: String, _ found: JSONValue) -> T? {
        addIssue(.invalidField, key, "expected \(expected), found \(found.typeDescription)")
        return nil
    }

    private func child(_ object: JSONObject, at location: Location) -> FieldReader {
        let reader = FieldReader(object, location: location, parent: self, diagnostics: diagnostics)
        if children.isEmpty { children.reserveCapacity(8) }  // one allocation for most readers
        children.append(reader)
        return reader
    }
}
