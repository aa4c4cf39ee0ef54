import ArgumentParser
import Foundation
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime

/// `campaign-pipeline demo`: the whole job on an embedded broker, with sample data and a readable summary.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the pipeline end to end on an embedded broker with the sample events, then summarize.",
        discussion: """
            Starts an embedded Kafka broker, creates the pipeline's topics, loads the sample events \
            (Config/samples/*.json: every template on both platforms; Config/demo: campaign definitions, a \
            cancelled campaign, an expired send, a broken one), runs the pipeline until it is idle and prints \
            what happened: events in, outcomes, a sample payload of each kind and where the outputs are. \
            This is what `make run` does. It exits 0 once the summary is printed, 1 when the samples cannot be \
            read or the pipeline fails, 64 on a usage error.
            """
    )

    @Option(help: ArgumentHelp("The folder holding samples/ and demo/.", valueName: "dir"))
    var configDirectory = "Config"

    // `.unconditional`: a negative number is this option's value (refused as not positive), not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this many idle seconds.", valueName: "seconds"))
    var idle: Double = 2

    @Flag(help: "Keep the embedded broker running after the summary (until Ctrl-C), to read the topics with kcat.")
    var keepBroker = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        try validateSeconds(idle, option: "--idle")
    }

    func run() async throws {
        var logger = try logging.makeLogger(label: "campaign-pipeline.demo")
        if logging.logLevel == nil && ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { logger.logLevel = .warning }
        let kafka = try EmbeddedKafka(brokers: 1, logger: logger)
        var configuration = PipelineConfiguration(bootstrapServers: [kafka.bootstrapServers])
        configuration.groupID = "campaign-pipeline-demo"
        configuration.untilIdle = .milliseconds(Int64(idle * 1000))
        configuration.consumerProperties = ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500"]
        for topic in configuration.topics.all {
            try kafka.createTopic(topic, partitions: 3)
        }

        let sends = try loadSends()
        let definitions = try lines(of: "\(configDirectory)/demo/definitions.jsonl")
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: logger)
        let records =
            definitions.map { line in
                KafkaProducerRecord(topic: configuration.topics.definitions, key: Self.field("campaignId", of: line), value: line)
            }
            + sends.map { line in
                KafkaProducerRecord(topic: configuration.topics.sends, key: Self.recipientKey(of: line), value: line)
            }
        for result in await producer.send(contentsOf: records) { _ = try result.get() }
        await producer.close()
        print("Embedded broker: \(kafka.bootstrapServers)")
        print("Loaded \(sends.count) sends and \(definitions.count) campaign events; running the pipeline until idle...")

        let pipeline = CampaignPipeline(configuration: configuration, registry: BuiltinTemplates.registry, logger: logger)
        try await pipeline.run()
        printSummary(pipeline.statistics.snapshot, configuration: configuration, bootstrap: kafka.bootstrapServers)

        if keepBroker {
            print("\nThe embedded broker keeps running; press Ctrl-C to stop.")
            // Standard output is buffered when it is not a terminal (a pipe, a file, `docker logs`): the summary and
            // these lines must be out while the broker waits, not when it stops.
            fflush(nil)  // every output stream (`stdout` itself is a global C variable Swift 6 does not let us read)
            try await BrokerCommand.waitForSignal(logger: logger, kafka: kafka)
        }
        kafka.shutdown()
    }

    private func loadSends() throws -> [[UInt8]] {
        let folder = "\(configDirectory)/samples"
        let now = Timestamp(secondsSince1970: Int64(Date().timeIntervalSince1970))
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted()
        } catch {
            throw CommandError("cannot read the folder \(folder) (run from the repository root, or pass --config-directory)")
        }
        var sends: [[UInt8]] = []
        for name in names {
            guard let data = FileManager.default.contents(atPath: "\(folder)/\(name)") else {
                throw CommandError("cannot read \(folder)/\(name)")
            }
            // One event per file, sent compact (a record is one JSON value).
            do throws(JSONParseError) {
                sends.append(Self.movedToNow(try JSONValue(parsing: Array(data)), now: now).encoded())
            } catch {
                throw CommandError("\(folder)/\(name) is not valid JSON: \(error)")
            }
        }
        return sends + (try lines(of: "\(configDirectory)/demo/sends.jsonl"))
    }

    /// The sample `event` with every RFC 3339 time in it moved by one amount, so that its `occurredAt` is `now`. The
    /// samples are the specification's examples, dated December 2023: as they are, their timers would have ended
    /// long ago, and the demo would show them expired instead of delivered.
    static func movedToNow(_ event: JSONValue, now: Timestamp) -> JSONValue {
        guard let text = event.objectValue?["occurredAt"]?.stringValue, let occurredAt = try? Timestamp(rfc3339: text) else {
            return event
        }
        return moved(event, by: now.secondsSince1970 - occurredAt.secondsSince1970)
    }

    private static func moved(_ value: JSONValue, by seconds: Int64) -> JSONValue {
        switch value {
        case .string(let text):
            guard let time = try? Timestamp(rfc3339: text) else { return value }
            return .string(time.adding(seconds: seconds).rfc3339)
        case .object(var object):
            for (key, member) in object { object[key] = moved(member, by: seconds) }
            return .object(object)
        case .array(let elements):
            return .array(elements.map { moved($0, by: seconds) })
        default:
            return value
        }
    }

    private func lines(of path: String) throws -> [[UInt8]] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandError("cannot read \(path) (run from the repository root, or pass --config-directory)")
        }
        return data.split(separator: UInt8(ascii: "\n")).map(Array.init).filter { !$0.isEmpty }
    }

    private static func field(_ name: String, of line: [UInt8]) -> [UInt8]? {
        ((try? JSONValue(parsing: line))?.objectValue?[name]?.stringValue).map { Array($0.utf8) }
    }

    private static func recipientKey(of line: [UInt8]) -> [UInt8]? {
        ((try? JSONValue(parsing: line))?.objectValue?["recipient"]?.objectValue?["id"]?.stringValue).map { Array($0.utf8) }
    }

    private func printSummary(_ summary: PipelineStatistics.Snapshot, configuration: PipelineConfiguration, bootstrap: String) {
        print("\n== Events in: \(summary.totalIn)")
        for (key, count) in summary.eventsIn.sorted(by: { $0.key < $1.key }) {
            print("   \(key.padding(toLength: 22, withPad: " ", startingAt: 0)) \(count)")
        }
        print("\n== Outcomes (one terminal analytics event per message)")
        for kind in AnalyticsEvent.Kind.allCases {
            var line = "   \(kind.rawValue.padding(toLength: 22, withPad: " ", startingAt: 0)) \(summary.outcomes[kind] ?? 0)"
            if kind == .expired, !summary.expiredByCause.isEmpty {
                line += "  (" + summary.expiredByCause.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue): \($0.value)" }.joined(separator: ", ") + ")"
            }
            print(line)
        }
        print("   timer expiries fired    \(summary.timersFired) (pending ones are kept in \(configuration.topics.timers) and fire on a later run)")
        print("   outputs sent again      \(summary.outputsRetried) (records the cluster did not take at first, retried until it did)")
        let warned = summary.totalWithWarnings
        print("   rendered with warnings  \(warned)\(warned > 0 ? " (sent all the same; the log lines 'Event rendered with warnings' say why)" : "")")
        print("\n== A sample payload of each kind")
        for (key, bytes) in summary.samplePayloads.sorted(by: { $0.key < $1.key }) {
            print("   \(key): \(String(decoding: bytes, as: UTF8.self))")
        }
        print("\n== A sample analytics event of each type")
        for (kind, bytes) in summary.sampleAnalytics.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            print("   \(kind.rawValue): \(String(decoding: bytes, as: UTF8.self))")
        }
        let topics = configuration.topics
        print(
            """

            == Where the outputs are
               payloads:   \(topics.fcm) (FCM request bodies), \(topics.apns) (APNs payloads; token and apns-* headers as record headers)
               analytics:  \(topics.analytics)
               rejected:   \(topics.deadLetters) (original record plus error.code, error.detail, source.* headers)
               timers:     \(topics.timers)
               Read them with kcat while the broker runs (campaign-pipeline demo --keep-broker):
                 kcat -b \(bootstrap) -t \(topics.fcm) -C -e -f '%k %h\\n%s\\n\\n'
                 kcat -b \(bootstrap) -t \(topics.analytics) -C -e
            """
        )
    }
}
