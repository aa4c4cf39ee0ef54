import Foundation
import Testing

@Suite("Test utilities: child processes")
struct UtilitiesTests {
    /// On Linux the global dispatch queues and Swift's cooperative pool draw on one pool of threads, which grows by
    /// about a thread a second while its threads are blocked. Children waited for there started one by one and held
    /// every other test's tasks back behind them (a CI run stalled for a minute); on threads of their own they all
    /// start at once.
    @Test("children run by runProcess each wait on a thread of their own: twelve slow ones start together")
    func childrenStartTogether() async throws {
        let shell = URL(fileURLWithPath: "/bin/sh")
        let starts = try await withThrowingTaskGroup(of: Double.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    let result = try await runProcess(shell, ["-c", "date +%s.%N; sleep 5"])
                    let printed = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                    return try #require(Double(printed), "the child printed its start time: \(printed)")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let spread = try #require(starts.max()) - (try #require(starts.min()))
        // Threads of their own: well under a second. Behind the shared pool: about six seconds.
        #expect(spread < 3, "the children started \(spread) s apart")
    }
}
