public import ArgumentParser
import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import PlatformSinks

/// The root of the `campaign-pipeline` command line.
///
/// Each job is a subcommand; ``campaign_pipeline`` only calls ``CampaignPipelineCommand/main()``.
@available(macOS 10.15, macCatalyst 13, iOS 13, tvOS 13, watchOS 6, *)
public struct CampaignPipelineCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "campaign-pipeline",
        abstract: "Render campaign events into FCM and APNs payloads and deliver them (Kafka payload topics, FCM, APNs).",
        discussion: """
            Reads push.requested events from Kafka, renders each with a registered template plugin \
            (\(BuiltinTemplates.renderers.map(\.templateID).joined(separator: ", ")); 'campaign-pipeline \
            templates' lists them with their fields), writes the payloads to the platform sinks and reports \
            every outcome on the analytics topic.
            """,
        version: "0.1.0",
        subcommands: [RunCommand.self, ReplayCommand.self, DemoCommand.self, BenchCommand.self, BrokerCommand.self, RenderCommand.self, TemplatesCommand.self, ProbeCommand.self]
    )

    public init() {}
}

extension CampaignPipelineCommand {
    /// Parses the process arguments, runs the chosen subcommand (awaiting it when it is asynchronous) and exits
    /// with its status; what `AsyncParsableCommand.main()` does, callable from an executable's top-level code.
    public static func runFromCommandLine() async {
        var subcommand: (any ParsableCommand.Type)?
        do {
            var command = try parseAsRoot()
            subcommand = type(of: command)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError where subcommand != nil && subcommand != Self.self {
            // A usage error found only while running (a replay range that does not fit the topic): with the
            // subcommand's usage, as one found while parsing has, not the root's.
            let command = subcommand ?? Self.self
            let name = command.configuration.commandName ?? "\(command)"
            let message = """
                Error: \(error.message)
                Usage: \(usageString(for: command))
                  See '\(Self.configuration.commandName ?? "campaign-pipeline") \(name) --help' for more information.

                """
            FileHandle.standardError.write(Data(message.utf8))
            exit(withError: ExitCode.validationFailure)
        } catch let error as KafkaError where error.code == .brokerUnreachable && (subcommand == RunCommand.self || subcommand == ReplayCommand.self) {
            // Not a failure of the run, nor an interrupted replay (status 1): a script or job tells "try again when the
            // cluster is back" from the other failures by the status. Only for the commands that connect to a cluster
            // they are given (`demo` and `bench` start their own).
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(withError: ExitCode(Self.unavailableStatus))
        } catch let error where isAboutConfiguration(error) {
            // Not a failure of the run (status 1): a supervisor or job tells "fix the configuration" from "retry" by
            // the status (systemd's `RestartPreventExitStatus=78`).
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(withError: ExitCode(Self.configurationStatus))
        } catch {
            exit(withError: error)
        }
    }

    /// The exit status when no broker of the cluster answered (sysexits' `EX_UNAVAILABLE`).
    static let unavailableStatus: Int32 = 69

    /// The exit status when a setting cannot be used: the configuration file, a variable, a Kafka property, a sink's
    /// credentials (sysexits' `EX_CONFIG`).
    static let configurationStatus: Int32 = 78

    /// Whether `error` is about a setting the command cannot use.
    static func isAboutConfiguration(_ error: any Error) -> Bool {
        switch error {
        case is ConfigurationError, is SinkConfigurationError: true
        case let error as KafkaError: error.code == .invalidConfiguration
        case let error as CommandError: error.isAboutConfiguration
        default: false
        }
    }
}
