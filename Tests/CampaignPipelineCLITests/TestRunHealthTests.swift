import Foundation
import TestRunWidth
import Testing

@Suite("Test run health: the cooperative pool keeps serving")
struct TestRunHealthTests {
    /// Every test's timeouts assume the pool serves a task within seconds. A test that blocks a pool thread (two
    /// here) holds back all the others, which then fail their timeouts far from the cause: a CI run's pool stalled
    /// for about a minute (child processes waited for on a dispatch queue) and the embedded broker's missed wake-ups
    /// stalled it for up to 19 s at every run's start. This test samples the pool while the other tests run and
    /// says when and for how long it stalled; the run's worst was about 5 s after those fixes, 17 to 19 s before. With
    /// every test started at once, two cores' work in the run's first minute made it 12 to 13 s again; the test
    /// binary now runs at most eight tests per core at once, and the worst is about a second. When this test starts
    /// depends on that limit, so it samples 45 s of the run, not necessarily its first.
    @Test("through 45 seconds of the parallel run, no task waits 12 seconds for a thread")
    func poolKeepsServing() async throws {
        let start = ContinuousClock.now
        var stalls: [String] = []
        var worst = Duration.zero
        while ContinuousClock.now - start < .seconds(45) {
            let asleep = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(100))
            let lag = ContinuousClock.now - asleep - .milliseconds(100)
            worst = max(worst, lag)
            if lag > .seconds(5) { stalls.append("\(lag) until \(ContinuousClock.now - start) into the run") }
        }
        print("The cooperative pool's longest wait in 45 s of the run: \(worst)")
        #expect(worst < .seconds(12), "the pool stalled: \(stalls.joined(separator: "; "))")
    }

    /// The width that keeps the pool serving is set by the test binary itself as it loads (eight tests per core,
    /// `Tests/TestRunWidth`), so a plain `swift test` runs as `make test` does; a width given in the environment wins.
    @Test("the run is bounded to a width, also under a plain `swift test`")
    func runWidthIsBounded() throws {
        let variable = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"
        let given = try #require(
            ProcessInfo.processInfo.environment[variable],
            "\(variable) is unset: Swift Testing starts every test at once"
        )
        let width = try #require(Int(given), "\(variable)=\(given) is not a number: Swift Testing ignores it")
        #expect(width > 0, "\(variable)=\(given): Swift Testing ignores a width below 1")
        let defaulted = campaign_test_run_default_width()
        if defaulted != 0 {
            #expect(width == defaulted)
        }
        let source = defaulted != 0 ? "the test binary's default" : "from the environment"
        print("Swift Testing's width: \(width) (\(source))")
    }
}
