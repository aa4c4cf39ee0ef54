import CampaignPipelineCLI
import PipelineCore
import Foundation
import Testing

/// `run --help` said the payloads are written to their Kafka topics, also for a deployment whose `sinks` send them
/// to FCM and APNs directly (the Kafka topics are only the default route); the command's overview said it delivers
/// them through Kafka.
@Suite("campaign-pipeline run --help")
struct RunHelpTests {
    @Test("the help says the payloads go to their platform's sinks, the Kafka topics only by default")
    func helpNamesTheSinks() async throws {
        let executable = try #require(Paths.executable, "build the campaign-pipeline product first")
        let run = try await runProcess(executable, ["run", "--help"])
        #expect(run.status == 0)
        // The help is wrapped to the terminal's width: compare with the line breaks read as spaces.
        let help = Self.unwrapped(run.stdout)
        #expect(!help.contains("writes FCM and APNs payloads to their Kafka topics"), "\(help)")
        #expect(
            help.contains("sinks (by default the Kafka payload topics; FCM HTTP v1 and APNs themselves when sinks.fcm and sinks.apns name them)"),
            "\(help)"
        )
        let overview = Self.unwrapped(try await runProcess(executable, ["--help"]).stdout)
        #expect(!overview.contains("deliver them through Kafka."), "\(overview)")
        #expect(overview.contains("(Kafka payload topics, FCM, APNs)"), "\(overview)")
        // The registered plugins, as the registry lists them: a plugin added to it is named without editing the text
        // (or this test). The shipped ones are among them.
        let plugins = BuiltinTemplates.renderers.map(\.templateID)
        #expect(Array(plugins.prefix(3)) == ["basic", "carousel", "timer"])
        #expect(overview.contains("template plugin (\(plugins.joined(separator: ", ")); 'campaign-pipeline templates' lists them"), "\(overview)")
    }

    /// `text` with every run of white space, line breaks included, as one space.
    static func unwrapped(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}
