@testable import KafkaClient
import Testing

@Suite("librdkafka's warnings of one facility are logged at their level at most so many times a minute")
struct RepeatedLogLinesTests {
    @Test("past the limit a facility's lines are held back and counted; the next window's first line carries the count")
    func limitPerFacilityAndWindow() {
        let lines = RepeatedLogLines(limit: 2, interval: .seconds(60))
        let start = ContinuousClock.now
        #expect(lines.admit("COMMITFAIL", at: start) == 0)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(1)) == 0)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(2)) == nil)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(59)) == nil)
        // Another facility has a window of its own.
        #expect(lines.admit("SESSTMOUT", at: start + .seconds(59)) == 0)
        // A new window: logged, with the two held back.
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(60)) == 2)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(61)) == 0)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(62)) == nil)
        #expect(lines.admit("COMMITFAIL", at: start + .seconds(200)) == 1)
    }
}
