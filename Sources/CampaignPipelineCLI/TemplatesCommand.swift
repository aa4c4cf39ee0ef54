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

            To add a template plugin of your own (a TemplateRenderer) and ship it with this command, \
            see Plugins/README.md in the repository.
            """
    )

    func run() async throws {
        print(Self.listing(for: BuiltinTemplates.registry), terminator: "")
    }

    /// The text the command prints for `registry`.
    static func listing(for registry: TemplateRegistry) -> String {
        var text = ""
        for renderer in registry.renderers {
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
