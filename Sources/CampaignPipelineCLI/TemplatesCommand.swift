import ArgumentParser
import PipelineCore

/// `campaign-pipeline templates`: lists the registered template plugins and their fields.
struct TemplatesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "templates",
        abstract: "List the registered template plugins, their content fields and what each platform requires.",
        discussion: """
            For every registered template: its id, the aliases an event's 'template' may use, a \
            summary, and a table of the content fields it reads with their type, whether each is \
            required on FCM and on APNs, and where it lands in the payload.

            With a NAME (a template's id or one of its aliases), only that template. With --json, \
            the same as one JSON object, for tools that check campaign content before it is sent: \
            {"templates":[{"id","aliases","summary","fields":[{"name","type","requiredOn","summary"}]}]}, \
            plus "overrides" when a plugin took another's name. Exits 0, or 64 for a NAME no template \
            answers to.

            To add a template plugin of your own (a TemplateRenderer) and ship it with this command, \
            see Plugins/README.md in the repository.
            """
    )

    @Argument(help: "Only the template with this id or alias.")
    var name: String?

    @Flag(help: "Print the listing as one JSON object.")
    var json = false

    func run() async throws {
        let registry = BuiltinTemplates.registry
        var renderers = registry.renderers
        if let name {
            do {
                renderers = [try registry.renderer(named: name)]
            } catch {
                // A usage error (64, with the usage), as a misspelt option is.
                throw ValidationError(error.issues.map(\.reason).joined(separator: "; "))
            }
        }
        if json {
            print(String(decoding: Self.jsonListing(of: renderers, in: registry).encoded(), as: UTF8.self))
        } else {
            print(Self.listing(of: renderers, in: registry), terminator: "")
        }
    }

    /// The text the command prints for `registry`.
    static func listing(for registry: TemplateRegistry) -> String {
        listing(of: registry.renderers, in: registry)
    }

    /// The listing of `--json` for `renderers` of `registry`: each template's id, aliases, summary and fields (the
    /// platforms a field is required on, in the order `fcm`, `apns`), and the names a plugin took from another.
    static func jsonListing(of renderers: [any TemplateRenderer], in registry: TemplateRegistry) -> JSONValue {
        var listing: JSONObject = [
            "templates": .array(renderers.map { renderer in
                [
                    "id": .string(renderer.templateID),
                    "aliases": .array(registry.aliases(of: renderer.templateID).map(JSONValue.string)),
                    "summary": .string(renderer.summary),
                    "fields": .array(renderer.fields.map { field in
                        [
                            "name": .string(field.name),
                            "type": .string(field.type),
                            "requiredOn": .array(Platform.allCases.filter(field.isRequired(on:)).map { .string($0.rawValue) }),
                            "summary": .string(field.summary),
                        ]
                    }),
                ]
            })
        ]
        if !registry.overrides.isEmpty {
            listing["overrides"] = .array(registry.overrides.map { .string($0.description) })
        }
        return .object(listing)
    }

    /// The text the command prints for `renderers` of `registry`.
    static func listing(of renderers: [any TemplateRenderer], in registry: TemplateRegistry) -> String {
        var text = ""
        for renderer in renderers {
            text += renderer.templateID
            let aliases = registry.aliases(of: renderer.templateID)
            if !aliases.isEmpty { text += " (aliases: \(aliases.joined(separator: ", ")))" }
            text += "\n"
            if !renderer.summary.isEmpty { text += "  \(renderer.summary)\n" }
            guard !renderer.fields.isEmpty else {
                // A table header with no rows read as a listing cut short.
                text += "  No fields listed (the plugin's `fields` is empty).\n\n"
                continue
            }
            let rows = [["field", "type", "fcm", "apns", "description"]] + renderer.fields.map { field in
                [
                    field.name,
                    field.type,
                    field.isRequired(on: .fcm) ? "required" : "-",
                    field.isRequired(on: .apns) ? "required" : "-",
                    field.summary,
                ]
            }
            var widths = [Int](repeating: 0, count: 4)
            for row in rows {
                for column in 0..<4 { widths[column] = max(widths[column], row[column].count) }
            }
            for row in rows {
                var line = "  "
                for column in 0..<4 {
                    line += row[column] + String(repeating: " ", count: widths[column] - row[column].count + 2)
                }
                text += line + row[4] + "\n"
            }
            text += "\n"
        }
        if !registry.overrides.isEmpty {
            text += "Names taken by a later registration:\n"
            for override in registry.overrides { text += "  \(override)\n" }
        }
        return text
    }
}
