public import ArgumentParser

/// Placeholder until the templates work lands.
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "render")
    func run() async throws {}
}
