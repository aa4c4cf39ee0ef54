/// The location of a field in an event, written the way error messages show it:
/// `content.items[3].image`. The empty path (the event itself) is written `$`.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    /// One step of a path.
    public enum Component: Sendable, Hashable {
        /// An object member.
        case key(String)
        /// An array element.
        case index(Int)
    }

    /// The steps from the event's root.
    public private(set) var components: [Component]

    /// The event itself.
    public static let root = FieldPath(components: [])

    /// Creates a path from its steps.
    public init(components: [Component]) {
        self.components = components
    }

    /// A path of object keys, e.g. `FieldPath("content", "title")`.
    public init(_ keys: String...) {
        self.components = keys.map(Component.key)
    }

    /// This path followed by the member `key`.
    public func appending(_ key: String) -> FieldPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    /// This path followed by the array element `index`.
    public func appending(index: Int) -> FieldPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    public var description: String {
        guard !components.isEmpty else { return "$" }
        var text = ""
        for component in components {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += key
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}
