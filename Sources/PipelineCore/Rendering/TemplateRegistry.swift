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
/// is no longer registered, and ``renderers`` no longer lists it.
public struct TemplateRegistry: Sendable {
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

    /// The payload size limit in bytes (APNs payload; FCM encoded `data` object). Default 4096.
    public var maximumPayloadSize = 4096

    /// An empty registry.
    public init() {}

    /// A registry with `renderers` registered in order.
    public init(_ renderers: [any TemplateRenderer]) {
        for renderer in renderers { register(renderer) }
    }

    /// Registers `renderer` under its ``TemplateRenderer/templateID`` and its aliases.
    public mutating func register(_ renderer: any TemplateRenderer) {
        let id = renderer.templateID
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
        let known = renderers.map { renderer in
            renderer.aliases.isEmpty ? renderer.templateID : "\(renderer.templateID) (\(renderer.aliases.joined(separator: ", ")))"
        }
        let list = known.isEmpty ? "none registered" : "known: \(known.joined(separator: ", "))"
        throw PipelineError(.unknownTemplate, at: FieldPath("template"), "unknown template '\(name)'; \(list)")
    }
}
