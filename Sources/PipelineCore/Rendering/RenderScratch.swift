/// Memory that one worker reuses for every event it decodes and renders: the reading state of a decoding or render
/// (which keys were read, where the readers are, the issues, warnings and personalization buffer), set up again for
/// each event instead of allocated for it.
///
/// ```swift
/// let scratch = RenderScratch()            // one per worker (task or thread)
/// for bytes in events {
///     let outcome = registry.render(eventBytes: bytes, scratch: scratch)
///     …
/// }
/// ```
///
/// Nothing a render returns refers to it: notifications, errors and warnings are values of their own. It is not
/// `Sendable`: a worker makes its own, and uses it for one event at a time.
public final class RenderScratch {
    /// Made at the first use, then set up again for each.
    private var reusable: RenderDiagnostics?

    /// The bytes a payload starts with, written here before they are put in front of the template's members (see
    /// ``PayloadObject/embed(after:then:)``).
    private var prefix = JSONWriter(reservingCapacity: 0)

    /// The APNs `aps` object, used again for each render (``PayloadObjectPool``).
    let objects = PayloadObjectPool()

    /// Creates an empty scratch; its memory is allocated by its first use.
    public init() {}

    /// Diagnostics for reading the object at `node` of `document`, at `path`: the scratch's own, set up anew. The
    /// readers of the previous use must no longer be in use.
    func diagnostics(document: JSONDocument, node: Int, path: FieldPath, personalizer: Personalizer? = nil) -> RenderDiagnostics {
        if let diagnostics = reusable {
            diagnostics.reset(document: document, node: node, path: path, personalizer: personalizer)
            return diagnostics
        }
        let diagnostics = RenderDiagnostics(document: document, node: node, path: path, personalizer: personalizer, objects: objects)
        reusable = diagnostics
        return diagnostics
    }
}

extension RenderScratch {
    /// Calls `body` with the scratch's writer for the start of a payload, emptied first, then `use` with what it
    /// wrote; returns what `use` returns. The writer is taken out of the scratch for the two calls and put back after.
    func withPrefix<Result>(written body: (inout JSONWriter) -> Void, _ use: ([UInt8]) -> Result) -> Result {
        var writer = JSONWriter(reservingCapacity: 0)
        swap(&writer, &prefix)
        if writer.bytes.capacity < 512 { writer = JSONWriter(reservingCapacity: 1024) }
        writer.removeAll()
        body(&writer)
        let result = use(writer.bytes)
        prefix = writer
        return result
    }
}

/// A scratch belongs to one worker at a time: it is not `Sendable`, and no module can declare it so.
@available(*, unavailable)
extension RenderScratch: Sendable {}
