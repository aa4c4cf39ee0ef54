/// The template plugins an application renders with, registered explicitly at startup.
///
/// ```swift
/// var registry = TemplateRegistry()
/// registry.register(BasicTemplate())
/// registry.register(CarouselTemplate())   // also answers to "car"
/// let outcome = registry.render(eventBytes: bytes)
/// ```
///
/// A value type: build it once, then share it freely (it is `Sendable`). Registering a template
/// whose id or alias is already taken replaces the earlier owner of that name, so an application
/// can override a shipped template; one left with no name of its own (its id and every alias taken)
/// is no longer registered, and ``renderers`` no longer lists it. Each name taken that way is kept in
/// ``overrides`` (the pipeline logs them as it starts, `campaign-pipeline render` and `templates`
/// print them), and ``aliases(of:)`` gives the aliases that still reach a template.
public struct TemplateRegistry: Sendable {
    /// A name (id or alias) a later registration took from the template that had it.
    public struct Override: Sendable, Hashable, CustomStringConvertible {
        /// The name taken.
        public var name: String
        /// The id of the template the name reached before.
        public var previousTemplateID: String
        /// The id of the template it reaches now (the same id when a template was registered again).
        public var templateID: String

        public var description: String {
            previousTemplateID == templateID
                ? "template '\(templateID)' was registered again; the later registration answers to '\(name)'"
                : "template '\(templateID)' takes the name '\(name)' from template '\(previousTemplateID)'"
        }
    }

    private var renderersByID: [String: any TemplateRenderer] = [:]
    private var idsByName: [String: String] = [:]
    private var order: [String] = []
    /// Every name (id or alias), and at the same index its renderer, made from the two dictionaries at each
    /// registration: a registry of a few templates finds an event's template by comparing names, which costs less
    /// than hashing the name twice.
    private var names: [String] = []
    private var renderersByName: [any TemplateRenderer] = []
    /// Up to this many names are compared one by one.
    private static let namesComparedOneByOne = 16

    /// Every name a registration took from another template (or from an earlier registration of the same id), in
    /// registration order.
    public private(set) var overrides: [Override] = []

    /// The payload size limit in bytes (APNs payload; FCM encoded `data` object). Default 4096.
    public var maximumPayloadSize = 4096

    /// An empty registry.
    public init() {}

    /// A registry with `renderers` registered in order.
    public init(_ renderers: [any TemplateRenderer]) {
        for renderer in renderers { register(renderer) }
    }

    /// Registers `renderer` under its ``TemplateRenderer/templateID`` and its aliases. A name already taken is
    /// taken from its owner (kept in ``overrides``).
    ///
    /// - Precondition: the id and every alias are non-empty (an event's `template` is never empty).
    public mutating func register(_ renderer: any TemplateRenderer) {
        let id = renderer.templateID
        precondition(
            !id.isEmpty && !renderer.aliases.contains(""),
            "template plugin \(type(of: renderer)) has an empty templateID or alias: an event's 'template' cannot name it"
        )
        for name in [id] + renderer.aliases {
            guard let previous = idsByName[name] else { continue }
            overrides.append(Override(name: name, previousTemplateID: previous, templateID: id))
        }
        if renderersByID[id] == nil { order.append(id) }
        renderersByID[id] = renderer
        idsByName[id] = id
        for alias in renderer.aliases { idsByName[alias] = id }
        // A template whose every name a later one took can no longer be reached.
        let reachable = Set(idsByName.values)
        order.removeAll { !reachable.contains($0) }
        renderersByID = renderersByID.filter { reachable.contains($0.key) }
        names = []
        renderersByName = []
        for (name, id) in idsByName {
            guard let renderer = renderersByID[id] else { continue }
            names.append(name)
            renderersByName.append(renderer)
        }
    }

    /// A copy with `renderer` registered.
    public func registering(_ renderer: any TemplateRenderer) -> TemplateRegistry {
        var copy = self
        copy.register(renderer)
        return copy
    }

    /// The registered renderers, in registration order.
    public var renderers: [any TemplateRenderer] {
        order.compactMap { renderersByID[$0] }
    }

    /// The aliases that reach the template `id`: those it declares that no later registration took, in its order,
    /// then those an earlier registration of the same id declared, which reach the later one (sorted).
    public func aliases(of id: String) -> [String] {
        guard let renderer = renderersByID[id] else { return [] }
        let declared = renderer.aliases.filter { idsByName[$0] == id }
        // Found by review: an override of a shipped template (`carousel` again, without `car`) still answered to
        // the earlier one's alias, but listings and errors did not name it.
        let inherited = idsByName.filter { name, owner in owner == id && name != id && !renderer.aliases.contains(name) }.keys.sorted()
        return declared + inherited
    }

    /// `id`, with the aliases that still reach it in parentheses: how listings and errors name a template.
    func listingName(of id: String) -> String {
        let aliases = aliases(of: id)
        return aliases.isEmpty ? id : "\(id) (\(aliases.joined(separator: ", ")))"
    }

    /// The renderer for a template id or alias.
    ///
    /// - Throws: ``PipelineError`` with code ``PipelineError/Code/unknownTemplate`` naming the
    ///   template and the known ones.
    public func renderer(named name: String) throws(PipelineError) -> any TemplateRenderer {
        if names.count <= Self.namesComparedOneByOne {
            if let index = names.firstIndex(of: name) { return renderersByName[index] }
        } else if let id = idsByName[name], let renderer = renderersByID[id] {
            return renderer
        }
        let known = order.map { listingName(of: $0) }
        let list = known.isEmpty ? "none registered" : "known: \(known.joined(separator: ", "))"
        throw PipelineError(.unknownTemplate, at: FieldPath("template"), "unknown template '\(name)'; \(list)")
    }
}
