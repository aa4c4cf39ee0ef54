/// Reads the fields of one JSON object with type checks, collecting every problem with its path.
///
/// Template plugins read their content through a reader (``RenderInput/content``): each accessor
/// returns the value or `nil`, and records an issue when a required field is missing (`required`)
/// or a field has the wrong type or value. Nothing throws while reading, so a renderer sees and
/// reports *all* problems; the registry fails the event afterwards if any issue was recorded.
///
/// `null` counts as absent. Content strings are personalized (`{{name}}`) when read with
/// ``string(_:required:personalize:)``. Keys a renderer never reads are reported as warnings
/// ("not a field of template '…'; ignored"), so read every field you support regardless of the platform.
///
/// Content is read in place from its ``JSONDocument``: a string is created only when it is read, and ``value(_:)``
/// builds a tree only for the object or array asked for.
///
/// A reader is a small value: what it reads, and what reading marks (which keys were read, the issues and
/// warnings), is kept by the render it belongs to, so readers of nested objects cost no allocation. A reader
/// belongs to one render call and must not be kept after it: the state it reads and marks is set up again for the
/// next event (``RenderScratch``), and a reader used after its render stops the process (a precondition) rather than
/// read or mark another event's fields.
public struct FieldReader {
    /// The render's reading state: the read keys, the readers' places, the issues and warnings.
    let diagnostics: RenderDiagnostics
    /// The document read (the diagnostics' own, kept here too: a reader's stored property is read without counting a
    /// reference, where the diagnostics', which a ``RenderScratch`` sets again for each use, would count one each time).
    let document: JSONDocument
    /// The object's node in the document.
    private let node: Int
    /// This reader's place among the render's (``RenderDiagnostics/rootPlace`` for the root).
    private let place: Int
    /// The use of the diagnostics this reader belongs to (``RenderDiagnostics/generation``).
    private let generation: Int

    /// The reader of the render's root object.
    init(root diagnostics: RenderDiagnostics) {
        self.init(diagnostics: diagnostics, document: diagnostics.document, node: diagnostics.rootNode, place: RenderDiagnostics.rootPlace)
    }

    private init(diagnostics: RenderDiagnostics, document: JSONDocument, node: Int, place: Int) {
        self.diagnostics = diagnostics
        self.document = document
        self.node = node
        self.place = place
        self.generation = diagnostics.generation
    }

    /// Stops the process when this reader is used after its render (its diagnostics set up for another event).
    @inline(__always)
    fileprivate func checkInUse() {
        precondition(
            generation == diagnostics.generation,
            "a FieldReader was used after its render ended (a reader must not be kept past the render it was given to)"
        )
    }

    /// The path of the object being read.
    public var path: FieldPath {
        diagnostics.path(of: place)
    }

    /// The object being read, built from the document.
    public var object: JSONObject {
        document.object(at: node)
    }

    // MARK: - Raw access

    /// The value of `key` (`nil` when absent or `null`); marks the key as read, and with it every key inside an object
    /// or array value (none of them is warned about as unread, misspelt or not). An object read member by member
    /// (`object(_:required:)`, `objectElements(_:required:)`) is checked key by key, and builds no tree.
    public func value(_ key: String) -> JSONValue? {
        value(FieldName(lookingUp: key))
    }

    /// ``value(_:)-(String)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func value(_ key: FieldName) -> JSONValue? {
        lookup(key).map { document.value(at: $0) }
    }

    /// Whether `key` is present and not `null`; marks the key as read.
    public func contains(_ key: String) -> Bool {
        contains(FieldName(lookingUp: key))
    }

    /// ``contains(_:)-(String)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func contains(_ key: FieldName) -> Bool {
        lookup(key) != nil
    }

    /// Marks keys as read without validating them (fields a renderer deliberately ignores).
    public func ignore(_ keys: String...) {
        for key in keys { _ = lookup(FieldName(lookingUp: key)) }
    }

    /// ``ignore(_:)-(String...)`` by prepared names (``FieldName``): the same result, without finding the names' bytes
    /// and tags again.
    public func ignore(_ keys: FieldName...) {
        for key in keys { _ = lookup(key) }
    }

    /// The number of elements of the array `key`, whatever their types (`nil` when absent, `null` or not an
    /// array); marks the key as read. Cheaper than counting ``value(_:)``'s array, which copies the elements.
    public func elementCount(_ key: String) -> Int? {
        elementCount(FieldName(lookingUp: key))
    }

    /// ``elementCount(_:)-(String)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func elementCount(_ key: FieldName) -> Int? {
        guard let value = lookup(key), document.kind(at: value) == .array else { return nil }
        return document.count(at: value)
    }

    // MARK: - Typed access

    /// A string field. Required strings must also be non-empty. An optional text read to be personalized (the
    /// content's texts) that is empty, as given or once personalized (then with a warning), reads as absent (`nil`):
    /// the SDKs fall back to another key only when one is absent (an empty expanded title is shown empty, not as the
    /// title). A field read as is (`personalize: false`: ids, names, versions) is returned as given, empty too.
    ///
    /// - Parameters:
    ///   - key: the member name.
    ///   - required: record `required` when absent.
    ///   - personalize: fill `{{name}}` placeholders from the recipient's attributes.
    public func string(_ key: String, required: Bool = false, personalize: Bool = true) -> String? {
        string(FieldName(lookingUp: key), required: required, personalize: personalize)
    }

    /// ``string(_:required:personalize:)-(String,_,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func string(_ key: FieldName, required: Bool = false, personalize: Bool = true) -> String? {
        guard let value = textNode(key, required: required, personalize: personalize) else { return nil }
        // A string without `{` has no placeholder: known from the document without scanning it again.
        // The personalizer is used where the render keeps it (`?.`): a local copy would count a reference to it.
        guard personalize, diagnostics.personalizes, document.mayHaveBrace(at: value) else {
            return document.string(at: value)
        }
        let filled =
            if document.isEscaped(at: value) {
                diagnostics.personalizer?.render(document.string(at: value), at: path.appending(key.name), into: diagnostics)
            } else {
                diagnostics.personalizer?.render(unescapedStringAt: value, of: document, at: path.appending(key.name), into: diagnostics)
            }
        guard let filled else { return document.string(at: value) }
        return filled.isEmpty ? emptyOncePersonalized(key, required: required) : filled
    }

    /// A string field as ``ContentText``: checked and personalized as ``string(_:required:personalize:)`` does, but
    /// text without escapes stays in the event's bytes and is copied from there when written into the payload,
    /// without a `String` made for it; one with simple `{{name}}` placeholders is checked and measured now (with a
    /// warning for each absent attribute) and filled as it is written. For fields copied into the payload as they are.
    public func text(_ key: String, required: Bool = false, personalize: Bool = true) -> ContentText? {
        text(FieldName(lookingUp: key), required: required, personalize: personalize)
    }

    /// ``text(_:required:personalize:)-(String,_,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func text(_ key: FieldName, required: Bool = false, personalize: Bool = true) -> ContentText? {
        contentText(documentText(key, required: required, personalize: personalize))
    }

    /// The address of an image the phone downloads (a notification's `image`, a carousel item's, a timer's alternate
    /// one), read as ``text(_:required:personalize:)-(FieldName,_,_)`` is, and `invalid_field` unless it is an
    /// absolute `http` or `https` URL with a host: neither SDK shows anything else (Android skips an image it cannot
    /// download, and a carousel left with fewer than three falls back to a basic notification without a picture;
    /// iOS drops it), so such an event is broken, not a notification without its picture. Plain `http` is a
    /// warning: iOS (App Transport Security) and Android 9 and later refuse it unless the app allows it. A text that
    /// begins with a placeholder (`{{hero}}`) is accepted unchecked, its scheme coming from the recipient's attributes.
    /// (A text with escapes, or with Mustache beyond simple placeholders, is filled as it is read, and judged filled.)
    public func imageURL(_ key: String, required: Bool = false) -> ContentText? {
        imageURL(FieldName(lookingUp: key), required: required)
    }

    /// ``imageURL(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without finding the
    /// name's bytes and tag again.
    public func imageURL(_ key: FieldName, required: Bool = false) -> ContentText? {
        contentText(documentImageURL(key, required: required))
    }

    /// ``imageURL(_:required:)-(FieldName,_)`` for a holder that keeps the document and the attributes itself, as
    /// ``documentText(_:required:personalize:)``.
    func documentImageURL(_ key: FieldName, required: Bool = false) -> DocumentText? {
        guard let text = documentText(key, required: required) else { return nil }
        let address: ImageAddress
        switch text {
        case .node(let node), .personalized(let node, _):
            address = document.withUnescapedBytes(ofStringAt: node) { ImageAddress($0) }
        case .text(let string):
            address = ImageAddress(string.utf8.span)
        }
        switch address {
        case .https, .placeholder:
            return text
        case .http:
            addWarning(key.name, "plain http: iOS (App Transport Security) and Android 9 and later refuse it unless the app allows it")
            return text
        case .invalid:
            // The event's text, not the filled one: a recipient's attributes stay out of the detail (which the
            // analytics record, the dead letter and the log carry).
            let given = lookup(key).map { document.string(at: $0) } ?? text.string(in: textSource)
            let shown = given.count > 100 ? given.prefix(100) + "…" : given[...]
            addIssue(.invalidField, key.name, "must be an absolute http or https URL (the phone downloads the image), found '\(shown)'")
            return nil
        }
    }

    private func contentText(_ text: DocumentText?) -> ContentText? {
        switch text {
        case .node(let node)?: ContentText(document: document, node: node)
        case .personalized(let node, let byteCount)?:
            ContentText(personalizing: node, of: document, from: diagnostics.attributes, byteCount: byteCount)
        case .text(let text)?: ContentText(text)
        case nil: nil
        }
    }

    /// ``text(_:required:personalize:)`` for a holder that keeps the document and the attributes itself
    /// (``StandardFields``, with ``textSource``): text left in the event's bytes is its node, which holds no
    /// reference to the document. A text with simple placeholders is checked and measured now, with a warning for
    /// each absent attribute, and filled when it is written (no `String` is made for it).
    func documentText(_ key: FieldName, required: Bool = false, personalize: Bool = true) -> DocumentText? {
        guard let value = textNode(key, required: required, personalize: personalize) else { return nil }
        if document.isEscaped(at: value) {
            let text = document.string(at: value)
            guard personalize, diagnostics.personalizes else { return .text(text) }
            let filled = diagnostics.personalizer?.render(text, at: path.appending(key.name), into: diagnostics) ?? text
            return filled.isEmpty ? emptyOncePersonalized(key, required: required) : .text(filled)
        }
        guard personalize, diagnostics.personalizes, document.mayHaveBrace(at: value) else { return .node(value) }
        switch diagnostics.personalizer?.measure(unescapedStringAt: value, of: document, at: path.appending(key.name), into: diagnostics) {
        case .simple(let filledCount)?:
            return filledCount == 0 ? emptyOncePersonalized(key, required: required) : .personalized(node: value, byteCount: filledCount)
        case .notSimple?:
            let text = document.string(at: value)
            let filled = diagnostics.personalizer?.renderWithMustache(text, at: path.appending(key.name), into: diagnostics) ?? text
            return filled.isEmpty ? emptyOncePersonalized(key, required: required) : .text(filled)
        case .noPlaceholder?, nil:
            return .node(value)
        }
    }

    /// Records that the string field `key` is empty once its placeholders are filled (the recipient's attributes
    /// they name are absent or empty): a required field is never sent empty, and an optional one is left out.
    private func emptyOncePersonalized<T>(_ key: FieldName, required: Bool) -> T? {
        if required {
            addIssue(.invalidField, key.name, "must not be empty: it is once personalized (the attributes its placeholders name are absent or empty)")
        } else {
            addWarning(key.name, "empty once personalized; left out, as if absent")
        }
        return nil
    }

    /// The node of the string field `key` read as a text (``string(_:required:personalize:)``): an optional one read
    /// to be personalized that is empty is left out (without a warning: the specification's own examples give an
    /// unused button `uri` as `""`).
    private func textNode(_ key: FieldName, required: Bool, personalize: Bool) -> Int? {
        guard let value = stringNode(key, required: required) else { return nil }
        return personalize && !required && document.isEmptyString(at: value) ? nil : value
    }

    /// The document and attributes of the ``DocumentText``s ``documentText(_:required:personalize:)`` reads.
    var textSource: TextSource {
        TextSource(document: document, attributes: diagnostics.attributes)
    }

    /// The node of the string field `key`; `nil` (with an issue when required, or not a string, or required and
    /// empty) otherwise.
    private func stringNode(_ key: FieldName, required: Bool) -> Int? {
        guard let value = fetch(key, required: required) else { return nil }
        guard document.kind(at: value) == .string else { return typeMismatch(key, "a string", value) }
        if required, document.isEmptyString(at: value) {
            addIssue(.invalidField, key.name, "must not be empty")
            return nil
        }
        return value
    }

    /// An integer field (a JSON number without fraction).
    public func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int>? = nil) -> Int? {
        integer(FieldName(lookingUp: key), required: required, in: range)
    }

    /// ``integer(_:required:in:)-(String,_,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func integer(_ key: FieldName, required: Bool = false, in range: ClosedRange<Int>? = nil) -> Int? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .int(let int) = scalar(value) else { return typeMismatch(key, "an integer", value) }
        if let range, !range.contains(int) {
            addIssue(.invalidField, key.name, "must be between \(range.lowerBound) and \(range.upperBound), found \(int)")
            return nil
        }
        return int
    }

    /// A boolean field.
    public func boolean(_ key: String, required: Bool = false) -> Bool? {
        boolean(FieldName(lookingUp: key), required: required)
    }

    /// ``boolean(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func boolean(_ key: FieldName, required: Bool = false) -> Bool? {
        guard let value = fetch(key, required: required) else { return nil }
        guard case .bool(let flag) = scalar(value) else { return typeMismatch(key, "a boolean", value) }
        return flag
    }

    /// An RFC 3339 date-time string field.
    public func timestamp(_ key: String, required: Bool = false) -> Timestamp? {
        timestamp(FieldName(lookingUp: key), required: required)
    }

    /// ``timestamp(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func timestamp(_ key: FieldName, required: Bool = false) -> Timestamp? {
        guard let value = fetch(key, required: required) else { return nil }
        guard document.kind(at: value) == .string else {
            return typeMismatch(key, "an RFC 3339 date-time string", value)
        }
        do throws(RFC3339Error) {
            return try document.timestamp(at: value)
        } catch {
            addIssue(.invalidField, key.name, error.reason)
            return nil
        }
    }

    /// A string field whose value must be one of `allowed` (compared exactly, case-sensitive).
    public func choice(_ key: String, from allowed: [String], required: Bool = false) -> String? {
        choice(FieldName(lookingUp: key), from: allowed, required: required)
    }

    /// ``choice(_:from:required:)-(String,_,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func choice(_ key: FieldName, from allowed: [String], required: Bool = false) -> String? {
        // The event's text when it matched only as a `String` (another spelling of the same text).
        choiceMatch(key, from: allowed, required: required, unknown: nil).map { $0.text ?? allowed[$0.index] }
    }

    /// ``choice(_:from:required:)-(String,_,_)`` as the position of the choice in `allowed`: for choices that stand
    /// for the cases of an enumeration, so that the case is taken by its index instead of matching a `String` again.
    ///
    /// ```swift
    /// let type = reader.choiceIndex(Fields.type, from: LinkType.wireValues).map { LinkType.allCases[$0] }
    /// ```
    ///
    /// - Parameters:
    ///   - key: the field.
    ///   - allowed: the choices; for an enumeration, its raw values in the order of its `allCases` (as
    ///     ``LinkType/wireValues``), or the index picks another case.
    ///   - required: whether a missing field is an issue.
    ///   - unknown: the issue's wording for a value that is none of the choices (`text`); by default the one
    ///     ``choice(_:from:required:)-(String,_,_)`` records.
    /// - Returns: the index in `allowed` of the field's value; `nil` (with an issue when it is one) otherwise.
    public func choiceIndex(
        _ key: String,
        from allowed: [String],
        required: Bool = false,
        unknown: ((_ text: String) -> String)? = nil
    ) -> Int? {
        choiceIndex(FieldName(lookingUp: key), from: allowed, required: required, unknown: unknown)
    }

    /// ``choiceIndex(_:from:required:unknown:)-(String,_,_,_)`` by a prepared name (``FieldName``).
    public func choiceIndex(
        _ key: FieldName,
        from allowed: [String],
        required: Bool = false,
        unknown: ((_ text: String) -> String)? = nil
    ) -> Int? {
        choiceMatch(key, from: allowed, required: required, unknown: unknown)?.index
    }

    /// The choice the string field `key` holds: its index in `allowed`, and the event's text when it was compared as a
    /// `String` (escaped in the event, or equal only as a `String`).
    private func choiceMatch(
        _ key: FieldName,
        from allowed: [String],
        required: Bool,
        unknown: ((_ text: String) -> String)?
    ) -> (index: Int, text: String?)? {
        guard let value = stringNode(key, required: required) else { return nil }
        // Compared in the event's bytes first: a value written as one of the choices needs no `String` of its own.
        if let index = allowed.firstIndex(where: { document.hasUnescapedBytes(ofStringAt: value, equalTo: $0) }) {
            return (index, nil)
        }
        let text = document.string(at: value)
        guard let index = allowed.firstIndex(of: text) else {
            let message = unknown?(text) ?? "must be one of \(allowed.joined(separator: ", ")), found '\(text)'"
            addIssue(.invalidField, key.name, message)
            return nil
        }
        return (index, text)
    }

    /// A colour: six hex digits, optionally after a `#`. Returns the six digits without `#`
    /// (the Android SDK prepends its own `#` and drops a colour that already has one).
    public func color(_ key: String, required: Bool = false) -> String? {
        color(FieldName(lookingUp: key), required: required)
    }

    /// ``color(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func color(_ key: FieldName, required: Bool = false) -> String? {
        guard let value = stringNode(key, required: required) else { return nil }
        // Checked and taken from the event's bytes; escapes and invalid colours go the long way (for the issue).
        if let normalized = document.hexColor(ofStringAt: value) { return normalized }
        let text = document.string(at: value)
        guard let normalized = HexColor.normalize(text) else {
            addIssue(.invalidField, key.name, "must be six hex digits like 00FF00 (optionally after '#'), found '\(text)'")
            return nil
        }
        return normalized
    }

    /// A nested object, as a reader for its fields.
    public func object(_ key: String, required: Bool = false) -> FieldReader? {
        object(FieldName(lookingUp: key), required: required)
    }

    /// ``object(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func object(_ key: FieldName, required: Bool = false) -> FieldReader? {
        guard let value = fetch(key, required: required) else { return nil }
        guard document.kind(at: value) == .object else { return typeMismatch(key, "an object", value) }
        return child(node: value, keyNode: value &- 1)
    }

    /// The object `key` as campaign content, read in place, or `nil` with an issue when it is not an object.
    func content(_ key: FieldName) -> CampaignContent? {
        guard let value = lookup(key) else { return nil }
        guard document.kind(at: value) == .object else { return typeMismatch(key, "an object", value) }
        return CampaignContent(document: document, node: value)
    }

    /// An array of objects, as readers for each element. Non-object elements are issues.
    public func objects(_ key: String, required: Bool = false) -> [FieldReader]? {
        objects(FieldName(lookingUp: key), required: required)
    }

    /// ``objects(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func objects(_ key: FieldName, required: Bool = false) -> [FieldReader]? {
        guard let elements = objectElements(key, required: required) else { return nil }
        var readers: [FieldReader] = []
        readers.reserveCapacity(elements.count)
        readers.append(contentsOf: elements)
        return readers
    }

    /// ``objectElements(_:required:)-(FieldName,_)`` by the key's text.
    public func objectElements(_ key: String, required: Bool = false) -> ObjectElements? {
        objectElements(FieldName(lookingUp: key), required: required)
    }

    /// An array of objects, as a sequence of readers for its object elements, made one by one as it is iterated (no
    /// array of readers is built). Everything else is as ``objects(_:required:)-(FieldName,_)``: the non-object
    /// elements are issues, recorded here, before any element is read.
    ///
    /// ```swift
    /// guard let items = content.objectElements(Fields.items, required: true) else { return }
    /// if items.count > 5 { content.addIssue(.invalidField, "items", "at most 5 items, found \(items.count)") }
    /// for item in items { writeItem(item) }
    /// ```
    public func objectElements(_ key: FieldName, required: Bool = false) -> ObjectElements? {
        guard let array = fetch(key, required: required) else { return nil }
        guard document.kind(at: array) == .array else { return typeMismatch(key, "an array", array) }
        let count = document.count(at: array)
        var element = array + 1
        for index in 0..<count {
            if document.kind(at: element) != .object {
                diagnostics.record(
                    .init(.invalidField, at: path.appending(key.name).appending(index: index), "expected an object, found \(document.value(at: element).typeDescription)")
                )
            }
            element = document.next(after: element)
        }
        return ObjectElements(parent: self, array: array, count: count)
    }

    /// The object elements of an array field (``objectElements(_:required:)-(FieldName,_)``): a reader for each, made
    /// as it is reached, in order; the other elements are skipped. Like a reader, it belongs to its render: iterating
    /// it after the render stops the process.
    public struct ObjectElements: Sequence, IteratorProtocol {
        /// The reader of the object holding the array.
        private let parent: FieldReader
        /// The array's node.
        private let array: Int
        /// The number of elements, objects or not (``FieldReader/elementCount(_:)-(FieldName)``).
        public let count: Int
        /// The next element's index and node.
        private var index = 0
        private var element: Int

        fileprivate init(parent: FieldReader, array: Int, count: Int) {
            self.parent = parent
            self.array = array
            self.count = count
            self.element = array + 1
        }

        public mutating func next() -> FieldReader? {
            // A sequence kept past its render would otherwise read another event's nodes.
            parent.checkInUse()
            while index < count {
                let node = element
                let position = index
                element = parent.document.next(after: node)
                index += 1
                if parent.document.kind(at: node) == .object {
                    return parent.child(node: node, keyNode: array &- 1, index: position)
                }
            }
            return nil
        }
    }

    /// An object whose values must all be strings (a string map), in order. Not personalized.
    public func stringMap(_ key: String, required: Bool = false) -> JSONObject? {
        stringMap(FieldName(lookingUp: key), required: required)
    }

    /// ``stringMap(_:required:)-(String,_)`` by a prepared name (``FieldName``): the same result, without
    /// finding the name's bytes and tag again.
    public func stringMap(_ key: FieldName, required: Bool = false) -> JSONObject? {
        guard let value = fetch(key, required: required) else { return nil }
        guard document.kind(at: value) == .object else { return typeMismatch(key, "an object of strings", value) }
        guard hasOnlyStrings(key, inObjectAt: value) else { return nil }
        return document.object(at: value)
    }

    /// ``stringMap(_:required:)`` as an event's `custom` keeps it: the object stays in its document (its values checked
    /// to be strings, nothing built).
    func stringMembers(_ key: FieldName) -> CustomMembers? {
        stringObjectNode(key).map { .document(document, node: $0) }
    }

    /// ``stringMap(_:required:)`` as recipient attributes: the object stays in its document (its values checked to
    /// be strings, nothing built).
    func attributeSource(_ key: FieldName) -> AttributeSource? {
        stringObjectNode(key).map { .document(document, node: $0) }
    }

    /// The node of the object `key`, when it is present and all its values are strings; `nil` otherwise (with an issue
    /// when it is there but not such an object).
    private func stringObjectNode(_ key: FieldName) -> Int? {
        guard let value = lookup(key) else { return nil }
        guard document.kind(at: value) == .object else { return typeMismatch(key, "an object of strings", value) }
        return hasOnlyStrings(key, inObjectAt: value) ? value : nil
    }

    /// Whether every value of the object at `index` (member `key` of this object) is a string; an issue for each
    /// that is not (all are checked, for their issues).
    private func hasOnlyStrings(_ key: FieldName, inObjectAt index: Int) -> Bool {
        var isValid = true
        document.forEachMember(ofObjectAt: index) { _, member, value in
            let kind = document.kind(at: value)
            guard kind != .string else { return }
            isValid = false
            diagnostics.record(
                .init(.invalidField, at: path.appending(key.name).appending(document.string(at: member)), "expected a string, found \(Self.typeDescription(kind))")
            )
        }
        return isValid
    }

    // MARK: - Reporting

    /// Records an issue for `key` (or for this object when `key` is `nil`).
    public func addIssue(_ code: PipelineError.Code, _ key: String?, _ reason: String) {
        checkInUse()
        diagnostics.record(.init(code, at: key.map(path.appending) ?? path, reason))
    }

    /// Records an issue at an arbitrary path (e.g. a nested field of an absent object).
    public func addIssue(_ code: PipelineError.Code, at path: FieldPath, _ reason: String) {
        checkInUse()
        diagnostics.record(.init(code, at: path, reason))
    }

    /// Records a warning for `key` (or for this object when `key` is `nil`).
    public func addWarning(_ key: String?, _ message: String) {
        checkInUse()
        diagnostics.record(RenderWarning(path: key.map(path.appending) ?? path, message: message))
    }

    /// The path of member `key`.
    public func path(of key: String) -> FieldPath {
        path.appending(key)
    }

    /// Adds a warning for every key of the render's objects that nobody read (see
    /// ``RenderDiagnostics/warnAboutUnreadKeys(template:)``).
    func warnAboutUnreadKeys(template: String) {
        diagnostics.warnAboutUnreadKeys(template: template)
    }

    // MARK: - Private

    /// The value node of `key`, its key marked as read; `nil` when absent or `null`.
    private func lookup(_ key: FieldName) -> Int? {
        checkInUse()
        guard let value = diagnostics.lookup(key, inObjectAt: node) else { return nil }
        return document.kind(at: value) == .null ? nil : value
    }

    private func fetch(_ key: FieldName, required: Bool) -> Int? {
        guard let value = lookup(key) else {
            if required { addIssue(.missingField, key.name, "required") }
            return nil
        }
        return value
    }

    /// The value at `node` when it is a scalar (containers are not built).
    private func scalar(_ value: Int) -> JSONValue? {
        switch document.kind(at: value) {
        case .object, .array: nil
        default: document.value(at: value)
        }
    }

    private func typeMismatch<T>(_ key: FieldName, _ expected: String, _ found: Int) -> T? {
        addIssue(.invalidField, key.name, "expected \(expected), found \(Self.typeDescription(document.kind(at: found)))")
        return nil
    }

    /// ``JSONValue/typeDescription`` of a node kind.
    static func typeDescription(_ kind: JSONDocument.Node.Kind) -> String {
        switch kind {
        case .null: "null"
        case .false, .true: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// A reader of the object at `node`, read at the key whose node is `keyNode` (at `index` of its array, or -1).
    fileprivate func child(node: Int, keyNode: Int, index: Int = -1) -> FieldReader {
        FieldReader(diagnostics: diagnostics, document: document, node: node, place: diagnostics.addPlace(node: node, parent: place, keyNode: keyNode, index: index))
    }
}
