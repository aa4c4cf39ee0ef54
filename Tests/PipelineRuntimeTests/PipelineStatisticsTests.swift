import PipelineCore
@testable import PipelineRuntime
import Testing

@Suite("Pipeline statistics: inputs counted per template and platform, the first payload of each kept")
struct PipelineStatisticsTests {
    @Test("counts and sample payloads")
    func countsAndSamples() {
        let statistics = PipelineStatistics()
        statistics.recordInput(template: "basic", platform: .fcm, payload: [1])
        statistics.recordInput(template: "basic", platform: .fcm, payload: [2])
        statistics.recordInput(template: "basic", platform: .apns)
        statistics.recordInput(template: "basic", platform: .apns, payload: [3])
        statistics.recordInput(template: nil, platform: nil)
        let snapshot = statistics.snapshot
        #expect(snapshot.eventsIn == ["basic/fcm": 2, "basic/apns": 2, "unknown/unknown": 1])
        #expect(snapshot.totalIn == 5)
        #expect(snapshot.samplePayloads == ["basic/fcm": [1], "basic/apns": [3]], "the first payload of each, not the latest")
        #expect(snapshot.firstInputAt != nil)
    }

    /// An event whose template could not be read and one of a template registered as `unknown` share a description:
    /// the sample of the one that has a payload is kept, whichever of the two the table lists first. Tables of many
    /// sizes (other templates counted first), so that both orders come up.
    @Test("a sample is kept when another key of the same description has none")
    func samplesSurviveASharedDescription() {
        for others in 0..<64 {
            let statistics = PipelineStatistics()
            for index in 0..<others { statistics.recordInput(template: "t\(index)", platform: .apns) }
            statistics.recordInput(template: nil, platform: .fcm)
            statistics.recordInput(template: "unknown", platform: .fcm, payload: [7])
            #expect(statistics.snapshot.samplePayloads == ["unknown/fcm": [7]], "\(others) other templates")
            #expect(statistics.snapshot.eventsIn["unknown/fcm"] == 2)
        }
    }

    @Test("events naming templates no plugin has are counted under one 'unknown' template, however many names")
    func madeUpTemplatesShareOneCount() async throws {
        try await withPipelineCluster(partitions: 2) { kafka, configuration in
            let factory = try EventFactory()
            var events = (0..<40).map { index in
                var event = factory.event("basic-fcm", id: "made-up-\(index)", recipient: "user-\(index)")
                event["template"] = .string("made-up-\(index)")
                return (key: "user-\(index)", value: JSONValue.object(event).encoded())
            }
            // An alias is counted under its template's id, rendered or not.
            var alias = factory.event("carousel-fcm", id: "alias", recipient: "user-alias")
            alias["template"] = "car"
            events.append((key: "user-alias", value: JSONValue.object(alias).encoded()))
            try await produce(events, to: configuration.topics.sends, kafka: kafka)

            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await pipeline.run()
            let snapshot = pipeline.statistics.snapshot
            #expect(snapshot.eventsIn == ["unknown/fcm": 40, "carousel/fcm": 1])
            #expect(snapshot.outcomes[.rejected] == 40)
        }
    }
}
