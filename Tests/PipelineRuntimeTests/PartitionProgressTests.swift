import KafkaClient
import Testing

@testable import PipelineRuntime

@Suite("Commit positions advance only over fully acknowledged events")
struct PartitionProgressTests {
    let partition = KafkaTopicPartition(topic: "campaign.sends", partition: 0)

    @Test("an event acknowledged out of order does not move the position past an earlier unfinished one")
    func contiguousPrefix() {
        let progress = PartitionProgress(partition: partition)
        var tickets: [Int64: EventTicket] = [:]
        for offset in Int64(10)...12 {
            #expect(progress.begin(offset: offset))
            let ticket = EventTicket(tracker: progress, offset: offset)
            ticket.add(1)  // one output each
            tickets[offset] = ticket
        }
        #expect(progress.inFlight == 3)
        // The processing loop finished queuing all three: each still waits on its output.
        for offset in Int64(10)...12 { #expect(tickets[offset]?.completeUnit() == false) }
        // The outputs of 12 and then 11 are acknowledged first: nothing may be committed yet.
        #expect(tickets[12]?.completeUnit() == true)
        #expect(progress.complete(at: 12) == nil)
        #expect(tickets[11]?.completeUnit() == true)
        #expect(progress.complete(at: 11) == nil)
        #expect(progress.inFlight == 3)
        // Once 10 is done, everything up to 12 is.
        #expect(tickets[10]?.completeUnit() == true)
        #expect(progress.complete(at: 10) == 13)
        #expect(progress.inFlight == 0)
        #expect(progress.completedPosition == 13)
    }

    @Test("an event is not done until the processing loop's own unit and every output are")
    func processingUnitHoldsTheEvent() {
        let ticket = EventTicket(tracker: PartitionProgress(partition: partition), offset: 5)
        ticket.add(2)
        #expect(!ticket.completeUnit())  // first output
        #expect(!ticket.completeUnit())  // second output
        #expect(ticket.completeUnit())  // the loop's unit
    }

    @Test("a ticket's units completed from many tasks at once end it exactly once")
    func ticketsCountAcrossTasks() async {
        let tickets = (0..<200).map { EventTicket(tracker: PartitionProgress(partition: partition), offset: Int64($0)) }
        // 64 units each (the loop's and 63 outputs), completed by 8 tasks at once, 8 each.
        for ticket in tickets { ticket.add(63) }
        let lastUnits = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var last = 0
                    for ticket in tickets {
                        for _ in 0..<8 where ticket.completeUnit() { last += 1 }
                    }
                    return last
                }
            }
            return await group.reduce(0, +)
        }
        #expect(lastUnits == tickets.count)
    }

    @Test("a rewound partition is refused, and a retired tracker ignores late acknowledgements")
    func rewindAndRetire() {
        let progress = PartitionProgress(partition: partition)
        #expect(progress.begin(offset: 7))
        #expect(!progress.begin(offset: 7), "the same offset again means the partition was read again")
        #expect(!progress.begin(offset: 3))
        let check = progress.isRetiredCheck
        #expect(!check() && !progress.isRetired)
        progress.retire()
        #expect(check() && progress.isRetired, "the check made before retiring sees it")
        #expect(progress.inFlight == 0, "a retired tracker holds nothing")
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
        #expect(progress.isPaused)
        _ = progress.complete(at: 0)
        progress.updateBackpressure(limit: 4) { decisions.append($0) }
        #expect(decisions == [true], "3 in flight: still paused")
        _ = progress.complete(at: 1)
        progress.updateBackpressure(limit: 4) { decisions.append($0) }
        #expect(decisions == [true, false], "2 in flight: resumed")
        #expect(!progress.isPaused)
    }

    @Test("an advanced position is queued for storing once per store, and again after the store takes it")
    func positionQueuedOncePerStore() {
        let progress = PartitionProgress(partition: partition)
        #expect(progress.markPositionToStore(), "the first advance queues the tracker")
        #expect(!progress.markPositionToStore(), "later advances find it queued")
        #expect(!progress.markPositionToStore())
        progress.positionTakenForStore()
        #expect(progress.markPositionToStore(), "an advance after the store took it queues it again")
    }
}
