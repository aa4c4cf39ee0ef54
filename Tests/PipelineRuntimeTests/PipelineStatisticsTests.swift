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
}
