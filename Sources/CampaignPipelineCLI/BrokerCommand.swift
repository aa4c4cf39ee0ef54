import ArgumentParser
import Foundation
import KafkaClient
import Logging
import PipelineRuntime
import ServiceLifecycle
import UnixSignals

/// `campaign-pipeline broker`: an embedded Kafka cluster for local runs and tests.
struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Run an embedded Kafka broker (librdkafka's mock cluster) with the pipeline's topics.",
        discussion: """
            Starts an in-process Kafka cluster on loopback, creates the contract's topics and those a default \
            replay writes to (replay.push.fcm, replay.push.apns, replay.campaign.analytics, replay.campaign.dlq), \
            prints the bootstrap address as the first line of standard output, then runs until SIGINT or \
            SIGTERM. Other processes (kcat, `campaign-pipeline run`) connect to that address.

            The mock cluster keeps about 5 MiB per partition and drops older records beyond that; it is \
            meant for development and tests, not for production data. It also creates any other topic a \
            client asks about, with 4 partitions (a real cluster does so only with auto.create.topics.enable, \
            and not for the pipeline's own checks): a misspelt topic name is not refused here, so create the \
            topics of another --output-prefix or configuration with --topic.

            Example:
              campaign-pipeline broker > broker.out &
              until [ -s broker.out ]; do sleep 0.2; done
              kcat -L -b "$(head -1 broker.out)"
              kill %1
            """
    )

    @Option(help: "Number of brokers in the cluster.")
    var brokers: Int = 3

    @Option(help: "Partitions per created topic.")
    var partitions: Int32 = 6

    @Option(
        name: .customLong("topic"),
        help: ArgumentHelp("Create this topic too (repeatable); ':n' sets its partitions (default --partitions).", valueName: "name[:n]")
    )
    var extraTopics: [String] = []

    /// The extra topics with their partition counts.
    var parsedTopics: [(name: String, partitions: Int32)] {
        get throws {
            try extraTopics.map { spec in
                guard let colon = spec.lastIndex(of: ":") else {
                    guard !spec.isEmpty else { throw ValidationError("--topic: expected name or name:partitions, not an empty name") }
                    return (spec, partitions)
                }
                let name = String(spec[..<colon])
                guard !name.isEmpty, let count = Int32(spec[spec.index(after: colon)...]), count >= 1 else {
                    throw ValidationError("--topic \(spec): expected name or name:partitions with a positive number")
                }
                return (name, count)
            }
        }
    }

    @Option(
        help: ArgumentHelp(
            "Stop when the process with this id is no longer the parent (`bench` runs its broker as a child this way, so the broker does not outlive a bench that was killed).",
            visibility: .hidden
        )
    )
    var parentPid: Int32?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (1...16).contains(brokers) else { throw ValidationError("--brokers must be between 1 and 16, not \(brokers)") }
        guard partitions >= 1 else { throw ValidationError("--partitions must be at least 1, not \(partitions)") }
        _ = try parsedTopics
    }

    func run() async throws {
        let logger = try logging.makeLogger(label: "campaign-pipeline.broker")
        let kafka = try EmbeddedKafka(brokers: brokers, logger: logger)
        let replayTopics = PipelineConfiguration.Topics().prefixingOutputs(with: ReplayCommand.defaultOutputPrefix).replayOutputs
        let topics = (PipelineConfiguration.Topics().all + replayTopics).map { (name: $0, partitions: partitions) } + (try parsedTopics)
        for topic in topics {
            try kafka.createTopic(topic.name, partitions: topic.partitions, replicationFactor: Int32(min(brokers, 3)))
        }
        // Unbuffered, so a parent process reading a pipe sees the address at once.
        FileHandle.standardOutput.write(Data((kafka.bootstrapServers + "\n").utf8))
        logger.info(
            "Embedded broker running",
            metadata: [
                "bootstrap": "\(kafka.bootstrapServers)",
                "brokers": "\(brokers)",
                "topics": "\(topics.map(\.name).joined(separator: ","))",
                "partitions": "\(partitions)",
            ]
        )
        try await Self.waitForSignal(logger: logger, kafka: kafka, parent: parentPid)
        kafka.shutdown()
        logger.info("Embedded broker stopped")
    }

    /// Keeps `kafka` up until SIGINT or SIGTERM, or until `parent` (when given) is no longer this process's parent.
    static func waitForSignal(logger: Logger, kafka: EmbeddedKafka, parent: Int32? = nil) async throws {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: EmbeddedBrokerService(kafka: kafka))]
        if let parent {
            services.append(.init(service: ParentWatch(parent: parent, logger: logger), successTerminationBehavior: .gracefullyShutdownGroup))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}

/// Returns once the process `parent` is no longer this process's parent: it ended, however (killed, even with
/// SIGKILL, which leaves it no chance to stop its children), and this process was handed to another. Also returns
/// when the group shuts down for another reason (a signal).
struct ParentWatch: Service {
    let parent: Int32
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            guard getppid() == parent else {
                logger.info("The parent process is gone; stopping", metadata: ["parent": "\(parent)"])
                return
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}

/// Keeps the embedded broker alive until graceful shutdown.
struct EmbeddedBrokerService: Service {
    let kafka: EmbeddedKafka

    func run() async throws {
        try? await gracefulShutdown()
    }
}
