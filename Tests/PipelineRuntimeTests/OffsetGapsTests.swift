import KafkaClient
@testable import PipelineRuntime
import Testing

@Suite("Offsets a reading passed over")
struct OffsetGapsTests {
    let partition = KafkaTopicPartition(topic: "campaign.sends", partition: 0)
    let other = KafkaTopicPartition(topic: "campaign.sends", partition: 1)

    @Test("what lies below the partition's first offset still stored was deleted; what lies above it held no record")
    func settledAgainstTheLowWatermark() {
        var gaps = OffsetGaps()
        gaps.note(from: 5, to: 5, in: partition)
        gaps.note(from: 7, to: 6, in: partition)
        #expect(gaps.isSettled, "no jump: nothing to check")
        gaps.note(from: 0, to: 40, in: partition)
        // A transaction marker passed over, and one astride the first offset still stored.
        gaps.note(from: 52, to: 53, in: partition)
        gaps.note(from: 58, to: 64, in: partition)
        gaps.note(from: 10, to: 12, in: other)
        #expect(!gaps.isSettled)
        #expect(gaps.settle(partition, lowWatermark: 60) == [0..<40, 52..<53, 58..<60])
        #expect(gaps.unchecked[partition] == nil && gaps.unchecked[other] == [10..<12])
        #expect(gaps.settle(other, lowWatermark: 10).isEmpty, "offsets at or above the first stored were not deleted")
        #expect(gaps.isSettled)
        #expect(gaps.settle(other, lowWatermark: 100).isEmpty, "checked once")
        #expect(gaps.deleted == [partition: [0..<40, 52..<53, 58..<60]])
        #expect(gaps.deletedCount == 43)
    }
}
