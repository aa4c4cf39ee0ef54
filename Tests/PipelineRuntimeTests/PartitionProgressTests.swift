import KafkaClient
import Testing

@testable import PipelineRuntime

@Suite("Commit positions advance only over fully acknowledged events")
struct PartitionProgressTests {
    let partition = KafkaTopicPartition(topic: "campaign.sends", partition: 0)

    @Test("an event acknowledged out of order does not move the position past an earlier unfinished one")
    func contiguousPrefix() {
        let progress = PartitionProgress(partition: partition)
        for offset in Int64(10)...12 {
            #expect(progress.begin(offset: offset))
            progress.add(1, at: offset)  // one output each
        }
        // The processing loop finished queuing all three.
        #expect(progress.complete(at: 10) == nil)
        #expect(progress.complete(at: 11) == nil)
        #expect(progress.complete(at: 12) == nil)
        // The output of 12 is acknowledged first: nothing may be committed yet.
        #expect(progress.complete(at: 12) == nil)
        #expect(progress.complete(at: 11) == nil)
        // Once 10 is done, everything up to 12 is.
        #expect(progress.complete(at: 10) == 13)
        #expect(progress.inFlight == 0)
        #expect(progress.completedPosition == 13)
    }

    @Test("an event is not done until the processing loop's own unit and every output are")
    func processingUnitHoldsTheEvent() {
        let progress = PartitionProgress(partition: partition)
        #expect(progress.begin(offset: 5))
        progress.add(2, at: 5)
        #expect(progress.complete(at: 5) == nil)  // first output
        #expect(progress.complete(at: 5) == nil)  // second output
        #expect(progress.complete(at: 5) == 6)  // the loop's unit
    }

    @Test("a rewound partition is refused, and a retired tracker ignores late acknowledgements")
    func rewindAndRetire() {
        let progress = PartitionProgress(partition: partition)
        #expect(progress.begin(offset: 7))
        #expect(!progress.begin(offset: 7), "the same offset again means the partition was read again")
        #expect(!progress.begin(offset: 3))
        progress.retire()
        #expect(progress.complete(at: 7) == nil)
        #expect(!progress.begin(offset: 8))
    }

    @Test("backpressure pauses at the limit and resumes at half of it")
    func backpressure() {
        let progress = PartitionProgress(partition: partition)
        var decisions: [Bool] = []
        for offset in Int64(0)..<4 {
            _ = progress.begin(offset: offset)
            progress.updateBackpressure(limit: 4) { decisions.append($0) }
        }
        #expect(decisions == [true])
        _ = progress.complete(at: 0)
        progress.updateBackpressure(limit: 4) { decisions.append($0) }
        #expect(decisions == [true], "3 in flight: still paused")
        _ = progress.complete(at: 1)
        progress.updateBackpressure(limit: 4) { decisions.append($0) }
        #expect(decisions == [true, false], "2 in flight: resumed")
    }
}
