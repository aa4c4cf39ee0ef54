/// What one decoding or render collects while it reads an object of a document: the issues and warnings, which
/// keys were read, and where its ``FieldReader``s are.
///
/// A per-render scratch object: created for one event, shared by that event's readers (which are small values
/// pointing here), and dropped when the render ends. It never crosses a concurrency domain.
final class RenderDiagnostics {
    var issues: [PipelineError.Issue] = []
    var warnings: [RenderWarning] = []
    let personalizer: Personalizer?
    /// Bytes reused by every personalized string of the render (one buffer per render, not one per string).
    var personalizationScratch: [UInt8] = []

    /// The document the readers read.
    let document: JSONDocument
    /// The root object's path.
    let rootPath: FieldPath
    /// Marked nodes, one bit each: the keys read (a key's node, whichever reader read it), and the objects already
    /// walked by ``warnAboutUnreadKeys(template:)``. The first 512 nodes in place (events have about a tenth of
    /// that), the others in ``marksAfter512``. Each is changed by a single statement that calls nothing, which lets
    /// the compiler drop the run-time exclusivity check it would otherwise make on each of the ~60 lookups of a
    /// render.
    private var marksBelow512 = InlineArray<8, UInt64>(repeating: 0)
    private var marksAfter512: [UInt64]
    /// The objects read, the root's first, then in the order their readers were made. A reader refers to its place
    /// by index, for its path and for ``warnAboutUnreadKeys(template:)``.
    private var places: [Place]
    /// The key nodes of one object by the hash of their tags (``JSONDocument/keyTag(_:at:count:)``), open addressing
    /// with linear probing; an entry is a key node plus one, 0 when free. Built for an object when a lookup asks for
    /// a member of it and the table holds another (readers mostly read one object's fields in a row), so a lookup
    /// compares about one key, in whatever order the event has its members.
    private var keyTable = InlineArray<64, UInt16>(repeating: 0)
    /// The object ``keyTable`` is for (-1: none).
    private var keyTableObject = -1

    /// Where a reader's object is.
    struct Place {
        /// Where an object is, relative to its parent: kept as a step, so that a ``FieldPath`` is built only when
        /// an issue or warning needs it.
        enum Location {
            /// The root object.
            case root
            /// The object at member `key` of the parent.
            case member(key: String)
            /// The object at `key[index]` of the parent.
            case element(key: String, index: Int)
        }

        /// The object's node.
        var node: Int
        /// The parent's place (none for the root).
        var parent: Int
        var location: Location
        /// The first and last places made below this one, and the next made below its parent (-1: none).
        var firstChild = -1
        var lastChild = -1
        var nextSibling = -1
    }

    /// The place of the root reader.
    static let rootPlace = 0

    /// Diagnostics for reading the object at `node` of `document`, whose path is `path`.
    init(document: JSONDocument, node: Int, path: FieldPath, personalizer: Personalizer? = nil) {
        self.document = document
        self.rootPath = path
        self.personalizer = personalizer
        let nodeCount = document.nodes.count
        self.marksAfter512 = nodeCount > 512 ? Array(repeating: 0, count: (nodeCount - 512 + 63) / 64) : []
        self.places = []
        places.reserveCapacity(8)
        places.append(Place(node: node, parent: -1, location: .root))
    }

    /// The root object's node.
    var rootNode: Int {
        places[Self.rootPlace].node
    }

    /// The value node of the member `key` of the object at `node`, its key marked as read; `nil` when absent.
    func lookup(_ key: String, inObjectAt node: Int) -> Int? {
        let text = key.utf8Span
        let needle = text.span
        let tag = JSONDocument.lookupTag(of: needle, isKnownASCII: text.isKnownASCII)
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

    /// Adds the place of a reader of the object at `node`, below `parent`; returns its index.
    func addPlace(node: Int, parent: Int, location: Place.Location) -> Int {
        // One access to the array (each is checked for exclusivity at run time: appending calls out).
        Self.add(Place(node: node, parent: parent, location: location), to: &places)
    }

    private static func add(_ place: Place, to places: inout [Place]) -> Int {
        let index = places.count
        places.append(place)
        let parent = place.parent
        if places[parent].lastChild < 0 {
            places[parent].firstChild = index
        } else {
            places[places[parent].lastChild].nextSibling = index
        }
        places[parent].lastChild = index
        return index
    }

    /// The path of the object at `place`.
    func path(of place: Int) -> FieldPath {
        let step = places[place]
        switch step.location {
        case .root: return rootPath
        case .member(let key): return path(of: step.parent).appending(key)
        case .element(let key, let index): return path(of: step.parent).appending(key).appending(index: index)
        }
    }

    /// Warns about every key nobody read: in the root object and then, depth first in the order they were opened,
    /// in the objects read below it. An object opened by two readers is warned about once.
    func warnAboutUnreadKeys(template: String) {
        let places = self.places
        var place = Self.rootPlace
        // Depth first without recursion: down to the first child, else on to the next sibling of this place or of
        // the nearest parent that has one.
        while true {
            let node = places[place].node
            if !isMarked(node) {
                mark(node)
                var key = node + 1
                for _ in 0..<document.count(at: node) {
                    if !isMarked(key) {
                        warnings.append(RenderWarning(path: path(of: place).appending(document.string(at: key)), message: "not a field of template '\(template)'; ignored"))
                    }
                    key = document.next(after: key + 1)
                }
            }
            if places[place].firstChild >= 0 {
                place = places[place].firstChild
                continue
            }
            while place != Self.rootPlace, places[place].nextSibling < 0 { place = places[place].parent }
            guard place != Self.rootPlace else { return }
            place = places[place].nextSibling
        }
    }
}
