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
/// An event's own content is read in place from the event's ``JSONDocument``: a string is created only when it is
/// read, and ``value(_:)`` builds a tree only for the object or array asked for. Content from elsewhere (a campaign
/// definition) is read from its ``JSONObject``; both read the same.
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

    /// The object being read, when it is a tree (empty when it is in ``document``).
    private let tree: JSONObject
    /// The document the object being read is in, if it is read in place (see ``JSONDocument``).
    private let document: JSONDocument?
    /// The object's node in ``document``.
    private let node: Int

    /// The object being read (built from the document when it is read in place).
    public var object: JSONObject {
        document?.object(at: node) ?? tree
    }

    let diagnostics: RenderDiagnostics
    /// Which members were read, as bits by position (the first 64 members; content objects are
    /// much smaller, so this usually avoids allocating a flag array per object).
    private var readMask: UInt64 = 0
    /// How many members the object has.
    private let memberCount: Int
    /// Read flags of the members after the first 64 (empty for smaller objects).
    private var overflowReadFlags: [Bool]
    /// The readers this one made, in order (for ``warnAboutUnreadKeys(template:)``): a list through
    /// ``nextSibling``, so that making children allocates nothing besides the children.
    private var firstChild: FieldReader?
    private var lastChild: FieldReader?
    private var nextSibling: FieldReader?

    /// A reader of a tree object.
    convenience init(_ object: JSONObject, path: FieldPath, diagnostics: RenderDiagnostics) {
        self.init(tree: object, document: nil, node: 0, location: .root(path), parent: nil, diagnostics: diagnostics)
    }

    /// A reader of the object at `node` of `document`, read in place.
    convenience init(document: JSONDocument, node: Int, path: FieldPath, diagnostics: RenderDiagnostics) {
        self.init(tree: JSONObject(), document: document, node: node, location: .root(path), parent: nil, diagnostics: diagnostics)
    }

    private init(
        tree: JSONObject,
        document: JSONDocument?,
        node: Int,
        location: Location,
        parent: FieldReader?,
        diagnostics: RenderDiagnostics
    ) {
        self.tree = tree
        self.document = document
        self.node = node
        self.location = location
        self.parent = parent
        self.diagnostics = diagnostics
        let count = document?.count(at: node) ?? tree.count
        self.memberCount = count
        self.overflowReadFlags = count > 64 ? Array(repeating: false, count: count - 64) : []
    }

    /// Releases the children one by one: a long list of siblings (an array of thousands of objects) released
    /// link by link would recurse once per sibling.
    deinit {
        lastChild = nil
        var next = firstChild
        firstChild = nil
        while let reader = next {
            next = reader.nextSibling
            reader.nextSibling = nil
        }
    }

    // MARK: - Raw access

    /// The value of `key` (`nil` when absent or `null`); marks the key as read.
    public func value(_ key: String) -> JSONValue? {
        lookup(key).map(materialize)
    }

    /// Whether `key` is present and not `null`; marks the key as read.
    public func contains(_ key: String) -> Bool {
        lookup(key) != nil
    }

    /// Marks keys as read without validating them (fields a renderer deliberately ignores).
    public func ignore(_ keys: String...) {
        for key in keys { _ = lookup(key) }
    }

    /// The number of elements of the array `key`, whatever their types (`nil` when absent, `null` or not an
    /// array); marks the key as read. Cheaper than counting ``value(_:)``'s array, which copies the elements.
    public func elementCount(_ key: String) -> Int? {
        switch lookup(key) {
        case .tree(.array(let elements)): elements.count
        case .node(let index) where document?.kind(at: index) == .array: document?.count(at: index)
        default: nil
        }
    }

    // MARK: - Typed access

    /// A string field. Required strings must also be non-empty.
    ///
    /// - Parameters:
    ///   - key: the member name.
    ///   - required: record `required` when absent.
    ///   - personalize: fill `{{name}}` placeholders from the recipient's attributes.
    public func string(_ key: String, required: Bool = false, personalize: Bool = true) -> String? {
        guard let slot = fetch(key, required: required) else { return nil }
        guard let text = text(of: slot) else { return typeMismatch(key, "a string", slot) }
        if required, text.isEmpty {
            addIssue(.invalidField, key, "must not be empty")
            return nil
        }
        guard personalize, let personalizer = diagnostics.personalizer else { return text }
        // A string read in place is known to have no `{` (then no placeholder) without scanning it again.
        if case .node(let index) = slot, document?.mayHaveBrace(at: index) == false { return text }
        return personalizer.render(text, at: path.appending(key), into: diagnostics)
    }

    /// An integer field (a JSON number without fraction).
    public func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int>? = nil) -> Int? {
        guard let slot = fetch(key, required: required) else { return nil }
        guard case .int(let int) = scalar(slot) else { return typeMismatch(key, "an integer", slot) }
        if let range, !range.contains(int) {
            addIssue(.invalidField, key, "must be between \(range.lowerBound) and \(range.upperBound), found \(int)")
            return nil
        }
        return int
    }

    /// A boolean field.
    public func boolean(_ key: String, required: Bool = false) -> Bool? {
        guard let slot = fetch(key, required: required) else { return nil }
        guard case .bool(let flag) = scalar(slot) else { return typeMismatch(key, "a boolean", slot) }
        return flag
    }

    /// An RFC 3339 date-time string field.
    public func timestamp(_ key: String, required: Bool = false) -> Timestamp? {
        guard let slot = fetch(key, required: required) else { return nil }
        do throws(RFC3339Error) {
            switch slot {
            case .tree(.string(let text)):
                return try Timestamp(rfc3339: text)
            case .node(let index) where document?.kind(at: index) == .string:
                guard let document else { return nil }
                return try document.timestamp(at: index)
            default:
                return typeMismatch(key, "an RFC 3339 date-time string", slot)
            }
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
        guard let slot = fetch(key, required: required) else { return nil }
        switch slot {
        case .tree(.object(let object)):
            return child(tree: object, node: 0, at: .member(key: key))
        case .node(let index) where document?.kind(at: index) == .object:
            return child(tree: JSONObject(), node: index, at: .member(key: key))
        default:
            return typeMismatch(key, "an object", slot)
        }
    }

    /// The object `key` as campaign content (read in place when this reader is), or `nil` with an issue when it is
    /// not an object.
    func content(_ key: String) -> CampaignContent? {
        guard let slot = lookup(key) else { return nil }
        switch slot {
        case .tree(.object(let object)):
            return CampaignContent(object)
        case .node(let index) where document?.kind(at: index) == .object:
            return document.map { CampaignContent(document: $0, node: index) }
        default:
            return typeMismatch(key, "an object", slot)
        }
    }

    /// An array of objects, as readers for each element. Non-object elements are issues.
    public func objects(_ key: String, required: Bool = false) -> [FieldReader]? {
        guard let slot = fetch(key, required: required) else { return nil }
        var readers: [FieldReader] = []
        switch slot {
        case .tree(.array(let elements)):
            readers.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                guard case .object(let object) = element else {
                    notAnObject(key, index, element.typeDescription)
                    continue
                }
                readers.append(child(tree: object, node: 0, at: .element(key: key, index: index)))
            }
        case .node(let array) where document?.kind(at: array) == .array:
            guard let document else { return nil }
            let count = document.count(at: array)
            readers.reserveCapacity(count)
            var element = array + 1
            for index in 0..<count {
                if document.kind(at: element) == .object {
                    readers.append(child(tree: JSONObject(), node: element, at: .element(key: key, index: index)))
                } else {
                    notAnObject(key, index, document.value(at: element).typeDescription)
                }
                element = document.next(after: element)
            }
        default:
            return typeMismatch(key, "an array", slot)
        }
        return readers
    }

    private func notAnObject(_ key: String, _ index: Int, _ found: String) {
        diagnostics.issues.append(.init(.invalidField, at: path.appending(key).appending(index: index), "expected an object, found \(found)"))
    }

    /// An object whose values must all be strings (a string map), in order. Not personalized.
    public func stringMap(_ key: String, required: Bool = false) -> JSONObject? {
        guard let slot = fetch(key, required: required) else { return nil }
        return stringMapValue(key, slot)
    }

    private func stringMapValue(_ key: String, _ slot: Slot) -> JSONObject? {
        switch slot {
        case .tree(.object(let object)):
            var isValid = true
            for (member, memberValue) in object where memberValue.stringValue == nil {
                isValid = false
                notAString(key, member, memberValue.typeDescription)
            }
            return isValid ? object : nil
        case .node(let index) where document?.kind(at: index) == .object:
            guard let document, hasOnlyStrings(key, inObjectAt: index, of: document) else { return nil }
            return document.object(at: index)
        default:
            return typeMismatch(key, "an object of strings", slot)
        }
    }

    /// ``stringMap(_:required:)`` as recipient attributes: an object read in place stays in its document (its
    /// values checked to be strings, nothing built); a tree object becomes a dictionary.
    func attributeSource(_ key: String) -> AttributeSource? {
        guard let slot = lookup(key) else { return nil }
        guard case .node(let index) = slot, let document, document.kind(at: index) == .object else {
            return stringMapValue(key, slot).map { .dictionary(AttributeSource.dictionary(of: $0)) }
        }
        return hasOnlyStrings(key, inObjectAt: index, of: document) ? .document(document, node: index) : nil
    }

    /// Whether every value of the object at `index` of `document` (member `key` of this object) is a string; an
    /// issue for each that is not (all are checked, for their issues).
    private func hasOnlyStrings(_ key: String, inObjectAt index: Int, of document: JSONDocument) -> Bool {
        var isValid = true
        document.forEachMember(ofObjectAt: index) { _, member, value in
            let kind = document.kind(at: value)
            guard kind != .string else { return }
            isValid = false
            notAString(key, document.string(at: member), Self.typeDescription(kind))
        }
        return isValid
    }

    private func notAString(_ key: String, _ member: String, _ found: String) {
        diagnostics.issues.append(.init(.invalidField, at: path.appending(key).appending(member), "expected a string, found \(found)"))
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
        // Usually every member was read: then the object's keys are not walked at all.
        let isAllRead = memberCount < 64 && readMask == (1 << UInt64(memberCount)) &- 1
        if !isAllRead {
            if let document {
                document.forEachMember(ofObjectAt: node) { position, key, _ in
                    if !wasRead(position) { addWarning(document.string(at: key), "not a field of template '\(template)'; ignored") }
                }
            } else {
                for (index, (key, _)) in tree.enumerated() where !wasRead(index) {
                    addWarning(key, "not a field of template '\(template)'; ignored")
                }
            }
        }
        var child = firstChild
        while let reader = child {
            reader.warnAboutUnreadKeys(template: template)
            child = reader.nextSibling
        }
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

    /// Where a member's value is: a tree value, or a node of ``document``.
    private enum Slot {
        case tree(JSONValue)
        case node(Int)
    }

    /// The value of `key`, marked as read; `nil` when absent or `null`.
    private func lookup(_ key: String) -> Slot? {
        // Optional chaining, not `if let document`: binding the document retains and releases it on every lookup.
        if document != nil {
            guard let (position, value) = document?.member(key, inObjectAt: node) else { return nil }
            markRead(position)
            return document?.kind(at: value) == .null ? nil : .node(value)
        }
        guard let index = tree.index(of: key) else { return nil }
        markRead(index)
        let value = tree.member(at: index).value
        if case .null = value { return nil }
        return .tree(value)
    }

    private func fetch(_ key: String, required: Bool) -> Slot? {
        guard let slot = lookup(key) else {
            if required { addIssue(.missingField, key, "required") }
            return nil
        }
        return slot
    }

    /// The text of a string slot.
    private func text(of slot: Slot) -> String? {
        switch slot {
        case .tree(.string(let text)): text
        case .node(let index) where document?.kind(at: index) == .string: document?.string(at: index)
        default: nil
        }
    }

    /// A slot's value when it is a scalar (containers are not built).
    private func scalar(_ slot: Slot) -> JSONValue? {
        switch slot {
        case .tree(let value): value
        case .node(let index):
            switch document?.kind(at: index) {
            case .object?, .array?, nil: nil
            default: document?.value(at: index)
            }
        }
    }

    private func materialize(_ slot: Slot) -> JSONValue {
        switch slot {
        case .tree(let value): value
        case .node(let index): document?.value(at: index) ?? .null
        }
    }

    private func typeMismatch<T>(_ key: String, _ expected: String, _ found: Slot) -> T? {
        let description =
            switch found {
            case .tree(let value): value.typeDescription
            case .node(let index): Self.typeDescription(document?.kind(at: index))
            }
        addIssue(.invalidField, key, "expected \(expected), found \(description)")
        return nil
    }

    /// ``JSONValue/typeDescription`` of a node kind.
    private static func typeDescription(_ kind: JSONDocument.Node.Kind?) -> String {
        switch kind {
        case .null?, nil: "null"
        case .false?, .true?: "a boolean"
        case .number?: "a number"
        case .string?: "a string"
        case .array?: "an array"
        case .object?: "an object"
        }
    }

    private func child(tree: JSONObject, node: Int, at location: Location) -> FieldReader {
        let reader = FieldReader(tree: tree, document: document, node: node, location: location, parent: self, diagnostics: diagnostics)
        if let lastChild {
            lastChild.nextSibling = reader
        } else {
            firstChild = reader
        }
        lastChild = reader
        return reader
    }
}
