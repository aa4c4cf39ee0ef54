public import ArgumentParser

/// The root of the `campaign-pipeline` command line.
///
/// Each job is a subcommand; ``campaign_pipeline`` only calls ``CampaignPipelineCommand/main()``.
public struct CampaignPipelineCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "campaign-pipeline",
        abstract: "Render campaign events into FCM and APNs payloads and deliver them through Kafka.",
        discussion: """
            Reads push.requested events from Kafka, renders each with a registered template plugin \
            (basic, carousel, timer), writes the payloads to the platform sinks and reports every \
            outcome on the analytics topic.
            """,
        version: "0.1.0",
        subcommands: [BrokerCommand.self, RenderCommand.self, TemplatesCommand.self]
    )

    public init() {}
}
