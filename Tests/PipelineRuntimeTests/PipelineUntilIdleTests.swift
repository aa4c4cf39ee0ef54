import Foundation
import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

@Suite("run --until-idle stops once it has caught up", .timeLimit(.minutes(2)))
struct PipelineUntilIdleTests {
    /// A partition the run has not read from is where the group committed it, or, with nothing committed, where
    /// `auto.offset.reset` starts it. Taken to be its beginning, a fresh group starting at the end waited for ever
    /// for records it would never read.
    @Test("a fresh group that starts at the end (auto.offset.reset latest) is idle at once")
    func freshGroupStartingAtTheEnd() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let factory = try EventFactory()
            let sends = (0..<10).map { index in
                ("user-\(index)", JSONValue.object(factory.event("basic-fcm", id: "before-\(index)", recipient: "user-\(index)")).encoded())
            }
            try await produce(sends, to: configuration.topics.sends, kafka: kafka)
            var latest = configuration
            latest.consumerProperties["auto.offset.reset"] = "latest"
            let pipeline = CampaignPipeline(configuration: latest, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(pipeline, timeout: .seconds(60))
            #expect(pipeline.statistics.snapshot.totalIn == 0, "the sends before the group started are not its")
        }
    }

    @Test("where a partition without a committed offset starts is read as librdkafka reads auto.offset.reset")
    func offsetResetIsReadAsLibrdkafkaReadsIt() {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: ["localhost:9092"], groupID: "g")
        #expect(!configuration.startsAtEndWithoutCommit, "earliest by default")
        configuration.offsetReset = .latest
        #expect(configuration.startsAtEndWithoutCommit)
        for (value, atEnd) in [("earliest", false), ("smallest", false), ("beginning", false), ("latest", true), ("largest", true), ("end", true)] {
            configuration.properties["auto.offset.reset"] = value
            #expect(configuration.startsAtEndWithoutCommit == atEnd, "\(value)")
        }
    }
}
