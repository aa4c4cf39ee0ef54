/// One content field a template reads, as the `templates` command lists it.
public struct TemplateField: Sendable, Hashable {
    /// The field's path inside `content`, e.g. `title`, `link.type`, `items[].image`.
    public var name: String
    /// Its JSON type, e.g. `string`, `integer`, `boolean`, `time`, `colour`, `object`, `array`,
    /// or the allowed values (`auto|manual`).
    public var type: String
    /// The platforms on which the field is required (empty: optional everywhere).
    public var requiredOn: Set<Platform>
    /// What it is and where it lands on each platform.
    public var summary: String

    /// Creates a field description.
    public init(_ name: String, _ type: String, requiredOn: Set<Platform> = [], _ summary: String) {
        self.name = name
        self.type = type
        self.requiredOn = requiredOn
        self.summary = summary
    }

    /// Whether the field is required on `platform`.
    public func isRequired(on platform: Platform) -> Bool {
        requiredOn.contains(platform)
    }
}
