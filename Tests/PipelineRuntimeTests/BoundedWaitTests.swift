import Testing

@testable import PipelineRuntime

/// A stopping replay waits for its periodic commit (librdkafka's wait for a group coordinator) only until the final
/// commit's turn: found by review, it waited without a bound, past the shutdown's.
@Suite("Bounded waits", .timeLimit(.minutes(1)))
struct BoundedWaitTests {
    @Test("a wait ends at its deadline while the task goes on, and at the task's end when that comes first")
    func endsAtTheDeadlineOrTheTasksEnd() async {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let task = Task {
            for await _ in stream {}
        }
        let started = ContinuousClock.now
        #expect(await BoundedWait.wait(for: task, until: .now + .milliseconds(200)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(!task.isCancelled, "left running, not cancelled")
        continuation.finish()
        #expect(await BoundedWait.wait(for: task, until: .now + .seconds(30)) == true)
    }
}
