/// What one decoding or render collects while it reads an object of a document: the issues and warnings, which
/// keys were read, and where its ``FieldReader``s are.
///
/// A scratch object shared by the readers of one decoding or render (small values pointing here). A
/// ``RenderScratch`` keeps one and sets it up again for each (``reset(document:node:path:personalizer:)``), so that a
/// worker rendering event after event allocates it once; without one it is made for a single render. It never crosses
/// a concurrency domain, and the readers of one use must not be kept past it.
final class RenderDiagnostics {
    /// The issues recorded (``record(_:)-(PipelineError.Issue)``).
    private(set) var issues: [PipelineError.Issue] = []
    /// The warnings recorded (``record(_:)-(RenderWarning)``).
    private(set) var warnings: [RenderWarning] = []
    /// Whether an issue or a warning was recorded since the last reset. Tested where there usually is none: a flag
    /// that is only ever loaded and stored is read without the run-time exclusivity check that reading the arrays
    /// (which appends change through calls) makes each time.
    private(set) var hasRecords = false
    /// Whether ``marksAfter512`` has words (tested without reading the array, as ``hasRecords``).
    private var hasMarksAfter512: Bool
    /// Which use this is: ``reset(document:node:path:personalizer:)`` counts one more, and a ``FieldReader`` of an
    /// earlier use that is used again stops the process instead of reading or marking another event's fields.
    private(set) var generation = 0
    /// Filled from the recipient's attributes (`nil`: not personalized). This, ``personalizes``, ``document`` and
    /// ``rootPath`` change only in `reset`, between uses, when no reader is reading them.
    private(set) var personalizer: Personalizer?
    /// Whether there is a ``personalizer`` (tested without copying it out).
    private(set) var personalizes: Bool
    /// Bytes reused by every personalized string that is made a `String` (``FieldReader``'s `string`): one buffer per
    /// scratch (or render), not one per string; it keeps the capacity of the longest.
    var personalizationScratch: [UInt8] = []

    /// The document the readers read.
    private(set) var document: JSONDocument
    /// The root object's path.
    private(set) var rootPath: FieldPath
    /// Marked nodes, one bit each: the keys read (a key's node, whichever reader read it), and the objects already
    /// walked by ``warnAboutUnreadKeys(template:)``. The first 512 nodes in place (events have about a tenth of
    /// that), the others in ``marksAfter512``. Each is changed by a single statement that calls nothing, which lets
    /// the compiler drop the run-time exclusivity check it would otherwise make on each of the ~60 lookups of a
    /// render.
    private var marksBelow512 = InlineArray<8, UInt64>(repeating: 0)
    private var marksAfter512: [UInt64]
    /// The objects read (``Place``), the root's first, then in the order their readers were made. A reader refers to
    /// its place by index, for its path and for ``warnAboutUnreadKeys(template:)``. The first 16 (the benchmark's
    /// events read 5 to 8 objects of their content) are kept in the object itself, so that a render allocates no
    /// array for them, the others in an array. Each is changed in place, one field at a time (``updatePlace(_:_:)``),
    /// as ``marksBelow512`` is: kept in a struct of their own with a subscript, all 16 were copied for every access.
    private var placesBelow16 = InlineArray<16, Place>(repeating: .unused)
    private var placesAfter16: [Place] = []
    private var placeCount = 0
    /// The key nodes of one object by the hash of their tags (``JSONDocument/keyTag(_:at:count:)``), open addressing
    /// with linear probing; an entry is a key node plus one, 0 when free. Built for an object when a lookup asks for
    /// a member of it and the table holds another (readers mostly read one object's fields in a row), so a lookup
    /// compares about one key, in whatever order the event has its members.
    private var keyTable = InlineArray<64, UInt16>(repeating: 0)
    /// The object ``keyTable`` is for (-1: none).
    private var keyTableObject = -1

    /// Where a reader's object is. Only integers (node and place indexes): kept in place and copied without
    /// reference counting.
    struct Place {
        /// The object's node.
        var node: Int32
        /// The parent's place (-1 for the root).
        var parent: Int32
        /// The node of the key the object was read at in its parent (-1 for the root): kept as a node, so that a
        /// ``FieldPath`` is built only when an issue or warning needs it.
        var keyNode: Int32
        /// The object's index in the array at ``keyNode`` (-1: the key's value is the object itself).
        var index: Int32
        /// The first and last places made below this one, and the next made below its parent (-1: none).
        var firstChild: Int32 = -1
        var lastChild: Int32 = -1
        var nextSibling: Int32 = -1

        static let unused = Place(node: -1, parent: -1, keyNode: -1, index: -1)
    }

    /// The place of the root reader.
    static let rootPlace = 0

    /// The payload objects the render's templates take (``StandardFields``): the scratch's.
    let objects: PayloadObjectPool

    /// Diagnostics for reading the object at `node` of `document`, whose path is `path`.
    init(document: JSONDocument, node: Int, path: FieldPath, personalizer: Personalizer? = nil, objects: PayloadObjectPool = PayloadObjectPool()) {
        self.objects = objects
        self.document = document
        self.rootPath = path
        self.personalizer = personalizer
        self.personalizes = personalizer != nil
        self.marksAfter512 = []
        self.hasMarksAfter512 = false
        // Set up as every later use is, by the one function that does it.
        reset(document: document, node: node, path: path, personalizer: personalizer)
    }

    /// Records `issue`.
    func record(_ issue: PipelineError.Issue) {
        issues.append(issue)
        hasRecords = true
    }

    /// Records `warning`.
    func record(_ warning: RenderWarning) {
        warnings.append(warning)
        hasRecords = true
    }

    /// Whether an issue was recorded.
    var hasIssues: Bool {
        hasRecords && !issues.isEmpty
    }

    /// The warnings recorded, read only when there are records.
    var recordedWarnings: [RenderWarning] {
        hasRecords ? warnings : []
    }

    /// Sets these diagnostics up for reading the object at `node` of `document`, whose path is `path`, as new ones
    /// would be: nothing read, no issue, no warning (those of the last use were handed out as values); the buffers
    /// keep their capacity.
    func reset(document: JSONDocument, node: Int, path: FieldPath, personalizer: Personalizer?) {
        generation &+= 1
        if hasRecords {
            issues = []
            warnings = []
            hasRecords = false
        }
        self.document = document
        self.rootPath = path
        self.personalizer = personalizer
        self.personalizes = personalizer != nil
        marksBelow512 = InlineArray(repeating: 0)
        let wordsAfter512 = document.nodes.count > 512 ? (document.nodes.count - 512 + 63) / 64 : 0
        if wordsAfter512 > 0 || hasMarksAfter512 {
            marksAfter512 = Array(repeating: 0, count: wordsAfter512)
            hasMarksAfter512 = wordsAfter512 > 0
        }
        placesBelow16[0] = Place(node: Int32(truncatingIfNeeded: node), parent: -1, keyNode: -1, index: -1)
        if placeCount > 16 { placesAfter16.removeAll(keepingCapacity: true) }
        placeCount = 1
        keyTableObject = -1
    }

    /// The attributes placeholders are filled from (none without a ``personalizer``).
    var attributes: AttributeSource {
        personalizer?.attributes ?? .dictionary([:])
    }

    /// The root object's node.
    var rootNode: Int {
        Int(placesBelow16[Self.rootPlace].node)
    }

    /// The value node of the member `key` of the object at `node`, its key marked as read; `nil` when absent.
    @inline(__always)
    func lookup(_ key: FieldName, inObjectAt node: Int) -> Int? {
        if key.isPrepared { return lookup(key.name, needle: key.utf8.span, tag: key.tag, inObjectAt: node) }
        let text = key.name.utf8Span
        return lookup(key.name, needle: text.span, tag: JSONDocument.lookupTag(of: text.span, isKnownASCII: text.isKnownASCII), inObjectAt: node)
    }

    /// ``lookup(_:inObjectAt:)`` of `key`, whose UTF-8 bytes are `needle` and lookup tag `tag`.
    @inline(__always)
    private func lookup(_ key: String, needle: Span<UInt8>, tag: UInt32, inObjectAt node: Int) -> Int? {
        // Objects of 9 to 48 members whose keys and the key asked for are plain ASCII (an event's top level and
        // content) are looked up in the table; the others member by member (a small object costs less to search than
        // to put in the table each time the reader comes back to it).
        guard tag != JSONDocument.untaggedKey, document.hasOnlyTaggedKeys(node) else {
            guard let (_, value) = document.member(key, inObjectAt: node) else { return nil }
            mark(value &- 1)
            return value
        }
        let count = document.count(at: node)
        guard count > 8, count <= 48, document.nodes.count <= Int(UInt16.max) else {
            guard let (_, value) = document.member(taggedKey: needle, tag: tag, inObjectAt: node) else { return nil }
            mark(value &- 1)
            return value
        }
        if keyTableObject != node { buildKeyTable(for: node) }
        var slot = Self.keySlot(tag)
        while true {
            let entry = Int(keyTable[slot])
            guard entry != 0 else { return nil }
            if document.isKey(at: entry &- 1, needle, tag: tag) {
                mark(entry &- 1)
                return entry
            }
            slot = (slot &+ 1) & 63
        }
    }

    /// Fills ``keyTable`` with the keys of the object at `node`.
    private func buildKeyTable(for node: Int) {
        var table = InlineArray<64, UInt16>(repeating: 0)
        var keyNode = node &+ 1
        for _ in 0..<document.count(at: node) {
            var slot = Self.keySlot(document.tag(ofKeyAt: keyNode))
            while table[slot] != 0 { slot = (slot &+ 1) & 63 }
            table[slot] = UInt16(truncatingIfNeeded: keyNode &+ 1)
            keyNode = document.next(after: keyNode &+ 1)
        }
        keyTable = table
        keyTableObject = node
    }

    /// The first slot of ``keyTable`` for a key tagged `tag`.
    @inline(__always)
    private static func keySlot(_ tag: UInt32) -> Int {
        Int(truncatingIfNeeded: (tag &* 0x9E37_79B1) >> 26)
    }

    /// Marks `node`.
    @inline(__always)
    func mark(_ node: Int) {
        let bit: UInt64 = 1 << UInt64(node & 63)
        if node < 512 {
            marksBelow512[node >> 6] |= bit
        } else {
            marksAfter512[(node - 512) >> 6] |= bit
        }
    }

    /// Whether `node` is marked.
    func isMarked(_ node: Int) -> Bool {
        let bit: UInt64 = 1 << UInt64(node & 63)
        return (node < 512 ? marksBelow512[node >> 6] : marksAfter512[(node - 512) >> 6]) & bit != 0
    }

    /// Adds the place of a reader of the object at `node`, below `parent`, read at the key whose node is `keyNode`
    /// (at `index` of that key's array, or -1); returns its index.
    func addPlace(node: Int, parent: Int, keyNode: Int, index: Int = -1) -> Int {
        let added = placeCount
        let place = Place(
            node: Int32(truncatingIfNeeded: node),
            parent: Int32(truncatingIfNeeded: parent),
            keyNode: Int32(truncatingIfNeeded: keyNode),
            index: Int32(truncatingIfNeeded: index)
        )
        if added < 16 { placesBelow16[added] = place } else { placesAfter16.append(place) }
        placeCount = added &+ 1
        let position = Int32(truncatingIfNeeded: added)
        let lastChild = self.place(parent).lastChild
        if lastChild < 0 {
            updatePlace(parent) { $0.firstChild = position }
        } else {
            updatePlace(Int(lastChild)) { $0.nextSibling = position }
        }
        updatePlace(parent) { $0.lastChild = position }
        return added
    }

    /// The place at `index`.
    @inline(__always)
    private func place(_ index: Int) -> Place {
        index < 16 ? placesBelow16[index] : placesAfter16[index &- 16]
    }

    /// Changes the place at `index` in place.
    @inline(__always)
    private func updatePlace(_ index: Int, _ change: (inout Place) -> Void) {
        if index < 16 { change(&placesBelow16[index]) } else { change(&placesAfter16[index &- 16]) }
    }

    /// The path of the object at `place`.
    func path(of place: Int) -> FieldPath {
        let step = self.place(place)
        guard step.parent >= 0 else { return rootPath }
        let path = path(of: Int(step.parent)).appending(document.string(at: Int(step.keyNode)))
        return step.index < 0 ? path : path.appending(index: Int(step.index))
    }

    /// Warns about every key nobody read: in the root object and then, depth first in the order they were opened,
    /// in the objects read below it. An object opened by two readers is warned about once.
    func warnAboutUnreadKeys(template: String) {
        var place = Self.rootPlace
        // Depth first without recursion: down to the first child, else on to the next sibling of this place or of
        // the nearest parent that has one.
        while true {
            let node = Int(self.place(place).node)
            if !isMarked(node) {
                mark(node)
                var key = node + 1
                for _ in 0..<document.count(at: node) {
                    if !isMarked(key) {
                        record(RenderWarning(path: path(of: place).appending(document.string(at: key)), message: "not a field of template '\(template)'; ignored"))
                    }
                    key = document.next(after: key + 1)
                }
            }
            let firstChild = self.place(place).firstChild
            if firstChild >= 0 {
                place = Int(firstChild)
                continue
            }
            while place != Self.rootPlace, self.place(place).nextSibling < 0 { place = Int(self.place(place).parent) }
            guard place != Self.rootPlace else { return }
            place = Int(self.place(place).nextSibling)
        }
    }
}
