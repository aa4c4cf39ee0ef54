@testable import CampaignPipelineCLI
import Synchronization
import Testing

@Suite("A long wait is said once; a short one is not")
struct WaitNoticeTests {
    struct Refused: Error {}

    @Test("an operation that outlasts the delay is noticed once, and its result returned")
    func longWaitIsNoticed() async throws {
        let notices = Mutex(0)
        let value = try await withNotice(after: .milliseconds(50), { notices.withLock { $0 += 1 } }) {
            try await Task.sleep(for: .milliseconds(400))
            return 7
        }
        #expect(value == 7)
        #expect(notices.withLock { $0 } == 1)
    }

    @Test("an operation that ends before the delay, or throws, is not noticed, even later")
    func shortWaitIsNotNoticed() async throws {
        let notices = Mutex(0)
        // A delay no stall of the test run's pool outlasts: at 200 ms, a CI run whose pool was busy started the
        // operation after the delay, and the notice was said, rightly. The group awaits the notice's task before it
        // returns, so a notice not cancelled by the operation's end would still be said (10 s later) and counted.
        let value = try await withNotice(after: .seconds(10), { notices.withLock { $0 += 1 } }) { "done" }
        #expect(value == "done")
        await #expect(throws: Refused.self) {
            try await withNotice(after: .seconds(10), { notices.withLock { $0 += 1 } }) { () async throws -> Int in throw Refused() }
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(notices.withLock { $0 } == 0)
    }
}
