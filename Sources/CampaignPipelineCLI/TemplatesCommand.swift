public import ArgumentParser

/// Placeholder until the templates work lands.
struct TemplatesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "templates")
    func run() async throws {}
}
