public import ArgumentParser

/// Placeholder until the Kafka work lands.
struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "broker")
    func run() async throws {}
}
