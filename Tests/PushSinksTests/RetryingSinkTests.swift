import BasicTemplate
import Logging
import PipelineCore
import PushSinks
import Synchronization
import TestSupport
import Testing

/// A platform whose answers the test scripts per attempt, recording what it was asked and how many attempts ran
/// at once. It stands in for the network so the sink's own queueing, ordering, retrying and stopping can be
/// checked; the real HTTP senders are tested against local servers in PlatformSinksTests.
final class ScriptedPlatform: PlatformSender {
    private struct State {
        var attempts: [String] = []
        var running = 0
        var peakRunning = 0
    }

    let kind = "scripted"
    let name = "scripted:test"
    private let answer: @Sendable (RenderedNotification, Int) async -> SinkFailure?
    private let state = Mutex(State())

    /// `answer` gets the notification and its attempt number (1-based, per message id).
    init(answer: @escaping @Sendable (RenderedNotification, Int) async -> SinkFailure?) {
        self.answer = answer
    }

    /// Event ids in the order attempts started.
    var attempts: [String] { state.withLock { $0.attempts } }
    var peakRunning: Int { state.withLock { $0.peakRunning } }

    func attempt(_ notification: RenderedNotification) async -> SinkFailure? {
        let number = state.withLock { state in
            state.attempts.append(notification.eventId)
            state.running += 1
            state.peakRunning = max(state.peakRunning, state.running)
            return state.attempts.filter { $0 == notification.eventId }.count
        }
        let result = await answer(notification, number)
        state.withLock { $0.running -= 1 }
        return result
    }
}

/// Collects outcomes by event id.
/// A virtual clock whose waits block until released, to observe a sink while notifications wait to retry.
final class HeldClock: Sendable {
    let virtual = VirtualClock()
    private let isReleased = Mutex(false)

    /// Lets every wait, now and later, end (moving the virtual time on).
    func release() {
        isReleased.withLock { $0 = true }
    }

    var retryClock: RetryClock {
        RetryClock(now: virtual.retryClock.now) { duration in
            while !self.isReleased.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            try await self.virtual.retryClock.sleep(duration)
        }
    }
}

final class OutcomeLog: Sendable {
    private let outcomes = Mutex<[(String, SinkOutcome)]>([])

    func record(_ eventId: String) -> @Sendable (SinkOutcome) -> Void {
        { outcome in self.outcomes.withLock { $0.append((eventId, outcome)) } }
    }

    var all: [(String, SinkOutcome)] { outcomes.withLock { $0 } }

    /// How many outcomes are failures.
    var failedCount: Int { all.filter { if case .failed = $0.1 { true } else { false } }.count }
    /// How many outcomes are abandonments.
    var abandonedCount: Int { all.filter { if case .abandoned = $0.1 { true } else { false } }.count }

    func waitForCount(_ count: Int) async throws {
        let start = ContinuousClock.now
        while all.count < count {
            if ContinuousClock.now - start > .seconds(60) { throw TestFailure(description: "only \(all.count) of \(count) outcomes arrived") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
}

@Suite("RetryingSink: queueing, order, retries and the stop")
struct RetryingSinkTests {
    let registry = TemplateRegistry([BasicTemplate()])
    let logger = Logger(label: "test")

    func notification(_ index: Int, recipient: String) throws -> RenderedNotification {
        try Fixtures.notification("basic-fcm", registry: registry, eventId: "event-\(index)", recipient: recipient, token: "token-\(recipient)")
    }

    /// Submits notifications `event-0` … `event-<count-1>`, each to the recipient `recipient(index)`, recording
    /// their outcomes in `log`.
    func submit(_ count: Int, to sink: some PushSink, log: OutcomeLog, recipient: (Int) -> String = { "user-\($0)" }) async throws {
        try await submit(0..<count, to: sink, log: log, recipient: recipient)
    }

    /// Submits notifications `event-<index>` for each of `indices`, as ``submit(_:to:log:recipient:)-(Int,_,_,_)``.
    func submit(_ indices: Range<Int>, to sink: some PushSink, log: OutcomeLog, recipient: (Int) -> String) async throws {
        for index in indices {
            let item = try notification(index, recipient: recipient(index))
            await sink.submit(item, completion: log.record(item.eventId))
        }
    }

    /// Runs the sink while `body` runs.
    func running<S: PushSink>(_ sink: S, _ body: () async throws -> Void) async throws {
        let task = Task { await sink.run() }
        defer { task.cancel() }
        try await body()
        task.cancel()
        await task.value
    }

    @Test("one recipient's notifications are attempted strictly in order, others in parallel up to the bound")
    func orderAndConcurrency() async throws {
        let platform = ScriptedPlatform { notification, _ in
            try? await Task.sleep(for: .milliseconds(Int.random(in: 1...5)))
            return nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 4, policy: RetryPolicy(), logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(200, to: sink, log: log) { "user-\($0 % 10)" }
            try await log.waitForCount(200)
        }
        #expect(log.all.allSatisfy { $0.1 == .delivered(attempts: 1) })
        for user in 0..<10 {
            let expected = stride(from: user, to: 200, by: 10).map { "event-\($0)" }
            let attempted = platform.attempts.filter { id in expected.contains(id) }
            #expect(attempted == expected, "user-\(user)'s notifications in submission order")
            let completed = log.all.map(\.0).filter { expected.contains($0) }
            #expect(completed == expected)
        }
        #expect(platform.peakRunning <= 4)
        #expect(platform.peakRunning > 1, "different recipients run in parallel")
    }

    /// A quota (FCM `QUOTA_EXCEEDED`) answered for one notification applies to the sink: the rest of the queue used
    /// to be sent at full speed meanwhile, each getting its own 429 (found by review).
    @Test("a sink-wide throttle holds every recipient's attempts until its Retry-After passes; the sink reports throttled meanwhile")
    func sinkWideThrottleHoldsEveryAttempt() async throws {
        let clock = HeldClock()
        let platform = ScriptedPlatform { notification, attempt in
            notification.eventId == "event-0" && attempt == 1 ? SinkFailure(.throttled, "429", retryAfter: .seconds(30)) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<2, to: sink, log: log, recipient: { _ in "slow" })
            let start = ContinuousClock.now
            while sink.state != .throttled {
                if ContinuousClock.now - start > .seconds(60) { throw TestFailure(description: "the sink never reported throttled") }
                try await Task.sleep(for: .milliseconds(2))
            }
            try await submit(2..<6, to: sink, log: log, recipient: { "fast-\($0)" })
            // Given time they would have used to be sent in (the clock's waits hold until released).
            try await Task.sleep(for: .milliseconds(300))
            #expect(platform.attempts == ["event-0"], "nothing else is sent while the sink is held")
            #expect(log.all.isEmpty)
            #expect(sink.state == .throttled)
            clock.release()
            try await log.waitForCount(6)
        }
        #expect(log.all.allSatisfy { $0.1 == .delivered(attempts: $0.0 == "event-0" ? 2 : 1) }, "\(log.all)")
        #expect(log.all.map(\.0).filter { $0 == "event-0" || $0 == "event-1" } == ["event-0", "event-1"], "the recipient keeps its order")
        #expect(clock.virtual.sleeps.allSatisfy { $0 == .seconds(30) }, "Retry-After honoured: \(clock.virtual.sleeps)")
    }

    /// Found by review: a backlog lines up for the sink's request slots before any answer comes. A delivery checked the
    /// hold once, before its wait for a slot, so the whole line was sent inside the Retry-After of a quota met meanwhile,
    /// each getting its own 429.
    @Test("a sink-wide throttle also holds the notifications already waiting for a request slot when it came")
    func sinkWideThrottleHoldsTheLineForSlots() async throws {
        let clock = HeldClock()
        let answerQuota = Mutex(false)
        let platform = ScriptedPlatform { notification, attempt in
            guard notification.eventId == "event-0", attempt == 1 else { return nil }
            // The first attempt answers once the others are waiting for the one slot.
            while !answerQuota.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
            return SinkFailure(.throttled, "429 QUOTA_EXCEEDED", retryAfter: .seconds(30))
        }
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<1, to: sink, log: log, recipient: { _ in "first" })
            let start = ContinuousClock.now
            while platform.attempts.isEmpty {
                if ContinuousClock.now - start > .seconds(60) { throw TestFailure(description: "event-0 was never attempted") }
                try await Task.sleep(for: .milliseconds(2))
            }
            try await submit(1..<6, to: sink, log: log, recipient: { "other-\($0)" })
            try await Task.sleep(for: .milliseconds(200))
            answerQuota.withLock { $0 = true }
            // Given time they would have used to be sent in (the clock's waits hold until released).
            try await Task.sleep(for: .milliseconds(300))
            #expect(platform.attempts == ["event-0"], "nothing else is sent inside the Retry-After")
            #expect(sink.state == .throttled)
            clock.release()
            try await log.waitForCount(6)
        }
        #expect(log.all.allSatisfy { $0.1 == .delivered(attempts: $0.0 == "event-0" ? 2 : 1) }, "\(log.all)")
        #expect(platform.attempts.count == 7)
    }

    /// Found by review: `Retry-After: 9223372036854775807` from a broken upstream crashed the process, formatting the
    /// give-up detail and sleeping out the sink's hold.
    @Test("an absurd Retry-After is taken as a day: the notification fails past its deadline, and the sink is held a day, not forever")
    func absurdRetryAfter() async throws {
        let policy = RetryPolicy(jitter: 0)
        #expect(policy.sinkWideHold(after: SinkFailure(.throttled, "429", retryAfter: .seconds(Int64.max))) == .seconds(86_400))
        #expect(policy.delay(afterAttempts: 1, retryAfter: .seconds(Int64.max), random: 0.99) == .seconds(86_400))

        let virtual = VirtualClock()
        let platform = ScriptedPlatform { notification, _ in
            notification.eventId == "event-0" ? SinkFailure(.throttled, "429 QUOTA_EXCEEDED", retryAfter: .seconds(Int64.max)) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: policy, clock: virtual.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<1, to: sink, log: log, recipient: { _ in "first" })
            try await log.waitForCount(1)
            try await submit(1..<2, to: sink, log: log, recipient: { _ in "second" })
            try await log.waitForCount(2)
        }
        guard case .failed(let failure) = log.all.first?.1 else {
            Issue.record("expected event-0 failed, got \(log.all)")
            return
        }
        #expect(failure.detail.contains("past the retry deadline"), "\(failure.detail)")
        #expect(log.all.last?.1 == .delivered(attempts: 1), "\(log.all)")
        #expect(virtual.sleeps == [.seconds(86_400)], "the second waits out the day's hold: \(virtual.sleeps)")
    }

    /// Found by review: `expiresAt` was judged only when the event was read; a notification retried through an outage
    /// reached the phone after it ("a request processed after this instant is not delivered").
    @Test("a notification whose expiresAt passes while it waits to be retried is not sent again: it expires")
    func expiresWhileRetrying() async throws {
        let clock = VirtualClock()
        let start = Timestamp(secondsSince1970: 1_800_000_000)
        // The wall clock moves with the virtual one.
        let wallClock: @Sendable () -> Timestamp = {
            let (seconds, attoseconds) = clock.now.components
            return Timestamp(secondsSince1970: start.secondsSince1970 + seconds, nanoseconds: Int32(attoseconds / 1_000_000_000))
        }
        let platform = ScriptedPlatform { _, _ in SinkFailure(.unavailable, "503") }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, wallClock: wallClock, logger: logger)
        let log = OutcomeLog()
        let expiring = try Fixtures.notification("basic-fcm", registry: registry, eventId: "event-0", recipient: "a", token: "t", expiresAt: start.adding(seconds: 3))
        try await running(sink) {
            await sink.submit(expiring, completion: log.record(expiring.eventId))
            try await log.waitForCount(1)
        }
        guard case .expired(let detail)? = log.all.first?.1 else {
            Issue.record("expected it to expire: \(log.all)")
            return
        }
        // Attempts at 0, 0.5, 1.5 and 3.5 s: the fourth would have come after expiresAt (3 s).
        #expect(platform.attempts.count == 3)
        #expect(detail.contains("after expiresAt 2027-01-15T08:00:03Z"), "\(detail)")
        #expect(detail.contains("3 attempts failed"), "\(detail)")
    }

    /// Found by review: an event read again is judged at the instant of its first reading; the sink judged its
    /// `expiresAt` by the wall clock alone, and expired before its first attempt a send the first reading had
    /// delivered. It now judges it as at that instant, plus the time since: attempts go on as long as they would have
    /// then.
    @Test("a notification judged at an earlier reading's instant expires as it would have then", arguments: [true, false])
    func judgedEarlierExpiresAsThen(accepted: Bool) async throws {
        let clock = VirtualClock()
        let start = Timestamp(secondsSince1970: 1_800_000_000)
        let wallClock: @Sendable () -> Timestamp = {
            let (seconds, attoseconds) = clock.now.components
            return Timestamp(secondsSince1970: start.secondsSince1970 + seconds, nanoseconds: Int32(attoseconds / 1_000_000_000))
        }
        let platform = ScriptedPlatform { _, _ in accepted ? nil : SinkFailure(.unavailable, "503") }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, wallClock: wallClock, logger: logger)
        let log = OutcomeLog()
        // Expired 10 s ago by the wall clock, judged 12 s ago: it had 2 s left then.
        var notification = try Fixtures.notification(
            "basic-fcm", registry: registry, eventId: "event-0", recipient: "a", token: "t", expiresAt: start.adding(seconds: -10)
        )
        notification.judgedEarlierBy = .seconds(12)
        try await running(sink) {
            await sink.submit(notification, completion: log.record(notification.eventId))
            try await log.waitForCount(1)
        }
        if accepted {
            #expect(log.all.first?.1 == .delivered(attempts: 1), "\(log.all)")
            return
        }
        // Always refused: attempts at 0, 0.5 and 1.5 s, in the 2 s it had; the next, at 3.5 s, would have come after.
        guard case .expired(let detail)? = log.all.first?.1 else {
            Issue.record("expected it to expire: \(log.all)")
            return
        }
        #expect(platform.attempts.count == 3)
        #expect(detail.contains("judged as read 12.0 seconds earlier"), "\(detail)")
    }

    /// A limit on one device's messages (APNs 429 `TooManyRequests`) is that recipient's: the others go on.
    @Test("a throttled recipient holds only its own later notifications")
    func throttledRecipientHoldsOnlyItself() async throws {
        let clock = HeldClock()
        let platform = ScriptedPlatform { notification, attempt in
            notification.eventId == "event-0" && attempt == 1 ? SinkFailure(.throttled, "429 TooManyRequests", retryAfter: .seconds(30), throttleScope: .recipient) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<2, to: sink, log: log, recipient: { _ in "slow" })
            try await submit(2..<6, to: sink, log: log, recipient: { "fast-\($0)" })
            try await log.waitForCount(4)
            #expect(Set(log.all.map(\.0)) == ["event-2", "event-3", "event-4", "event-5"], "other recipients are not held")
            #expect(sink.state == .ready, "one device's limit is not the sink's")
            clock.release()
            try await log.waitForCount(6)
        }
        #expect(log.all.suffix(2).map(\.0) == ["event-0", "event-1"], "the held recipient keeps its order")
        #expect(log.all.first { $0.0 == "event-0" }?.1 == .delivered(attempts: 2))
        #expect(clock.virtual.sleeps == [.seconds(30)], "Retry-After honoured")
    }

    /// A sink of one attempt at a time on a held clock, whose platform answers FCM's 429 `QUOTA_EXCEEDED` (which may
    /// be one device's, ``ThrottleScope/sinkOrRecipient``) to the first `attempts` attempts of each recipient
    /// `throttles` names, and accepts every other attempt. A sink-wide throttle without `Retry-After` holds it 60 s.
    func quotaSink(
        throttling throttles: @escaping @Sendable (String) -> Bool,
        attempts: Int = 1
    ) -> (HeldClock, ScriptedPlatform, RetryingSink<ScriptedPlatform>) {
        let clock = HeldClock()
        let platform = ScriptedPlatform { notification, attempt in
            attempt <= attempts && throttles(notification.request.recipient.id)
                ? SinkFailure(.throttled, "FCM 429 QUOTA_EXCEEDED", throttleScope: .sinkOrRecipient) : nil
        }
        let policy = RetryPolicy(jitter: 0, throttledBackoff: .seconds(60))
        return (clock, platform, RetryingSink(sender: platform, concurrency: 1, policy: policy, clock: clock.retryClock, logger: logger))
    }

    /// FCM answers 429 `QUOTA_EXCEEDED` both for the project's quota and for one device's message rate. One device
    /// over its rate, while other recipients' notifications are accepted, holds only that recipient: every FCM 429 used
    /// to hold the whole sink for a minute (found by review), so one busy device stalled every recipient.
    @Test("a throttle that may be one device's holds only its recipient while others are accepted")
    func unscopedThrottleOfOneDevice() async throws {
        let (clock, _, sink) = quotaSink(throttling: { $0 == "busy" })
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<1, to: sink, log: log, recipient: { _ in "busy" })
            try await submit(1..<4, to: sink, log: log, recipient: { "free-\($0)" })
            try await log.waitForCount(3)
            #expect(log.all.map(\.0) == ["event-1", "event-2", "event-3"], "the other recipients are sent meanwhile")
            #expect(sink.state == .ready, "one device's rate is not the sink's")
            clock.release()
            try await log.waitForCount(4)
        }
        #expect(log.all.first { $0.0 == "event-0" }?.1 == .delivered(attempts: 2))
        #expect(clock.virtual.sleeps == [.milliseconds(500)], "its own backoff, not the sink's minute")
    }

    /// The same answer for two recipients in a row, with none accepted in between, is the project's quota: the whole
    /// sink waits its throttled backoff, as after any sink-wide throttle.
    @Test("a throttle that may be one device's throttles the sink once another recipient is throttled so before any is accepted")
    func unscopedThrottleOfTheProject() async throws {
        // "c" is accepted: its attempt after the hold would otherwise be judged against whichever of "a" and "b" was
        // answered last, and wait a backoff of its own or not.
        let (clock, platform, sink) = quotaSink(throttling: { $0 != "c" })
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<1, to: sink, log: log, recipient: { _ in "a" })
            while platform.attempts.count < 1 { try await Task.sleep(for: .milliseconds(2)) }
            try await submit(1..<2, to: sink, log: log, recipient: { _ in "b" })
            // The answer is judged just after the attempt returns.
            let start = ContinuousClock.now
            while sink.state != .throttled, ContinuousClock.now - start < .seconds(30) { try await Task.sleep(for: .milliseconds(2)) }
            #expect(sink.state == .throttled, "a second recipient throttled with none accepted: the project's quota")
            // A third recipient is not tried while the sink is held (without the hold it would be at once: the two
            // waiting hold no attempt).
            try await submit(2..<3, to: sink, log: log, recipient: { _ in "c" })
            try await Task.sleep(for: .milliseconds(200))
            #expect(platform.attempts == ["event-0", "event-1"])
            clock.release()
            try await log.waitForCount(3)
        }
        #expect(log.all.allSatisfy { if case .delivered = $0.1 { true } else { false } }, "\(log.all)")
        let waited = clock.virtual.sleeps.reduce(Duration.zero, +)
        #expect(waited >= .seconds(60), "the sink waited its throttled backoff: \(clock.virtual.sleeps)")
        // The second recipient's failure comes back scoped to the sink, so its own retry waits the hold too (it used
        // to wait its own backoff first, and be judged against the retry deadline by that backoff).
        #expect(clock.virtual.sleeps.filter { $0 == .milliseconds(500) }.count == 1, "only the first recipient's own backoff: \(clock.virtual.sleeps)")
    }

    /// The rule has two halves a sink-wide throttle needs: another recipient (one device throttled again is still one
    /// device), and none accepted in between (a busy device between accepted ones is not the project's quota).
    @Test("the same device throttled twice, or two throttled with one accepted between, leave the sink ready")
    func unscopedThrottlesThatStayOneDevices() async throws {
        let (sameClock, _, sameDevice) = quotaSink(throttling: { $0 == "busy" }, attempts: 2)
        let sameLog = OutcomeLog()
        try await running(sameDevice) {
            try await submit(0..<1, to: sameDevice, log: sameLog, recipient: { _ in "busy" })
            sameClock.release()
            try await sameLog.waitForCount(1)
            #expect(sameDevice.state == .ready)
        }
        #expect(sameLog.all.first?.1 == .delivered(attempts: 3))
        #expect(sameClock.virtual.sleeps.reduce(Duration.zero, +) < .seconds(10), "one device's backoff only: \(sameClock.virtual.sleeps)")

        let (clock, platform, sink) = quotaSink(throttling: { $0 != "accepted" })
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(0..<1, to: sink, log: log, recipient: { _ in "a" })
            try await submit(1..<2, to: sink, log: log, recipient: { _ in "accepted" })
            try await log.waitForCount(1)
            try await submit(2..<3, to: sink, log: log, recipient: { _ in "b" })
            while !platform.attempts.contains("event-2") { try await Task.sleep(for: .milliseconds(2)) }
            // Judged just after the attempt returns.
            try await Task.sleep(for: .milliseconds(100))
            #expect(sink.state == .ready, "one accepted between the two throttled recipients")
            clock.release()
            try await log.waitForCount(3)
        }
        #expect(clock.virtual.sleeps.reduce(Duration.zero, +) < .seconds(10), "no sink-wide hold: \(clock.virtual.sleeps)")
    }

    /// A `Retry-After` longer than the retry deadline gives the message up at once: the sink used to stay "ready"
    /// then, and the pipeline kept reading at full speed into the quota (found by review).
    @Test("a sink-wide throttle marks the sink throttled also when its message is given up")
    func throttleGivenUpStillMarksTheSink() async throws {
        let clock = HeldClock()
        let platform = ScriptedPlatform { notification, _ in
            notification.eventId == "event-0" ? SinkFailure(.throttled, "FCM 429 QUOTA_EXCEEDED", retryAfter: .seconds(3_600)) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0, deadline: .seconds(600)), clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            let first = try notification(0, recipient: "a")
            let second = try notification(1, recipient: "b")
            await sink.submit(first, completion: log.record(first.eventId))
            try await log.waitForCount(1)
            await sink.submit(second, completion: log.record(second.eventId))
            #expect(sink.state == .throttled)
            clock.release()
            try await log.waitForCount(2)
        }
        guard case .failed(let failure)? = log.all.first?.1 else {
            Issue.record("expected event-0 to fail: \(log.all)")
            return
        }
        #expect(failure.code == .throttled)
        #expect(log.all.last?.1 == .delivered(attempts: 1), "sent once the hour passed")
        #expect(clock.virtual.sleeps == [.seconds(3_600)], "the next notification waited out the Retry-After")
    }

    /// As many recipients waiting out a per-device limit (APNs 429) as the sink has attempts in flight: a wait holds
    /// no attempt, so another recipient is sent meanwhile (it used to wait for them, up to the retry deadline).
    @Test("recipients waiting to retry hold no attempt: with as many waiting as the concurrency, others are still sent")
    func waitingRecipientsDoNotHoldTheAttempts() async throws {
        let clock = HeldClock()
        let platform = ScriptedPlatform { notification, attempt in
            notification.request.recipient.id.hasPrefix("busy") && attempt == 1
                ? SinkFailure(.throttled, "APNs 429 TooManyRequests", retryAfter: .seconds(30), throttleScope: .recipient) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(jitter: 0), clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            for (index, recipient) in ["busy-1", "busy-2", "free"].enumerated() {
                let item = try notification(index, recipient: recipient)
                await sink.submit(item, completion: log.record(item.eventId))
            }
            try await log.waitForCount(1)
            #expect(log.all.map(\.0) == ["event-2"], "the free recipient is sent while both busy ones wait")
            #expect(sink.state == .ready, "a per-device limit does not throttle the sink")
            clock.release()
            try await log.waitForCount(3)
        }
        #expect(log.all.allSatisfy { if case .delivered = $0.1 { true } else { false } }, "\(log.all)")
        #expect(platform.peakRunning <= 2)
    }

    @Test("refused credentials stop the sink: that and every held notification is abandoned, nothing more is attempted")
    func authStops() async throws {
        let gate = Mutex(false)
        let platform = ScriptedPlatform { notification, _ in
            if notification.eventId == "event-0" {
                while !gate.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
                return SinkFailure(.auth, "403 InvalidProviderToken")
            }
            return SinkFailure(.auth, "403 InvalidProviderToken")
        }
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: RetryPolicy(), logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(50, to: sink, log: log)
            gate.withLock { $0 = true }
            try await log.waitForCount(50)
            let late = try notification(99, recipient: "late")
            await sink.submit(late, completion: log.record(late.eventId))
            try await log.waitForCount(51)
        }
        #expect(platform.attempts == ["event-0"], "one refusal stops the sink; the backlog is not burnt through")
        #expect(log.all.allSatisfy { if case .abandoned(let failure) = $0.1 { failure.code == .auth } else { false } })
        guard case .stopped(let failure) = sink.state else {
            Issue.record("expected the sink stopped, got \(sink.state)")
            return
        }
        #expect(failure.detail == "403 InvalidProviderToken")
    }

    /// The deadline counts from a notification's first attempt: waiting for its turn behind other recipients' slow
    /// attempts (a platform timing out, a long backlog) is not retrying, and must not use the deadline up before the
    /// notification was ever sent.
    @Test("the retry deadline counts from the first attempt, not from the wait for a turn before it")
    func deadlineCountsFromTheFirstAttempt() async throws {
        let clock = VirtualClock()
        let otherSubmitted = Mutex(false)
        let platform = ScriptedPlatform { notification, attempt in
            if notification.eventId == "event-0" {
                // A slow attempt, taking the one permit while the other notification waits for it.
                while !otherSubmitted.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
                try? await Task.sleep(for: .milliseconds(200))
                clock.advance(by: .seconds(15 * 60))
                return nil
            }
            return attempt == 1 ? SinkFailure(.unavailable, "503") : nil
        }
        let policy = RetryPolicy(initialBackoff: .seconds(1), jitter: 0, deadline: .seconds(600))
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: policy, clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            let slow = try notification(0, recipient: "a")
            await sink.submit(slow, completion: log.record(slow.eventId))
            while platform.attempts.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
            let waiting = try notification(1, recipient: "b")
            await sink.submit(waiting, completion: log.record(waiting.eventId))
            otherSubmitted.withLock { $0 = true }
            try await log.waitForCount(2)
        }
        let outcomes = Dictionary(uniqueKeysWithValues: log.all)
        #expect(outcomes["event-0"] == .delivered(attempts: 1))
        #expect(outcomes["event-1"] == .delivered(attempts: 2), "one failed attempt is retried, however long it waited for its turn")
        #expect(clock.sleeps == [.seconds(1)])
    }

    @Test("final failures are reported once with their reason; retries ran out ends as the last reason")
    func finalFailures() async throws {
        let clock = VirtualClock()
        let platform = ScriptedPlatform { notification, _ in
            switch notification.request.recipient.id {
            case "dead": SinkFailure(.invalidToken, "410 Unregistered")
            case "down": SinkFailure(.unavailable, "503")
            default: nil
            }
        }
        let policy = RetryPolicy(initialBackoff: .seconds(1), maxBackoff: .seconds(4), deadline: .seconds(20))
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: policy, clock: clock.retryClock, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            for (index, recipient) in ["dead", "down", "fine"].enumerated() {
                let item = try notification(index, recipient: recipient)
                await sink.submit(item, completion: log.record(item.eventId))
            }
            try await log.waitForCount(3)
        }
        let outcomes = Dictionary(uniqueKeysWithValues: log.all)
        #expect(outcomes["event-0"] == .failed(SinkFailure(.invalidToken, "410 Unregistered", attempts: 1)))
        #expect(outcomes["event-2"] == .delivered(attempts: 1))
        guard case .failed(let failure)? = outcomes["event-1"] else {
            Issue.record("expected event-1 to fail, got \(String(describing: outcomes["event-1"]))")
            return
        }
        #expect(failure.code == .unavailable)
        #expect(platform.attempts.filter { $0 == "event-1" }.count == failure.attempts)
        #expect(failure.attempts > 3)
    }

    @Test("a withdrawn notification (its partition moved) is abandoned without being sent")
    func withdrawn() async throws {
        let platform = ScriptedPlatform { _, _ in nil }
        let sink = RetryingSink(sender: platform, concurrency: 2, policy: RetryPolicy(), logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            let kept = try notification(0, recipient: "a")
            let withdrawn = try notification(1, recipient: "b")
            await sink.submit(kept, isCancelled: { false }, completion: log.record(kept.eventId))
            await sink.submit(withdrawn, isCancelled: { true }, completion: log.record(withdrawn.eventId))
            try await log.waitForCount(2)
        }
        let outcomes = Dictionary(uniqueKeysWithValues: log.all)
        #expect(outcomes["event-0"] == .delivered(attempts: 1))
        guard case .abandoned(let reason)? = outcomes["event-1"] else {
            Issue.record("expected abandoned, got \(String(describing: outcomes["event-1"]))")
            return
        }
        #expect(reason.detail.contains("withdrawn"))
        #expect(platform.attempts == ["event-0"])
        #expect(sink.state == .ready, "withdrawing is not a stop")
    }

    @Test("a limit on one device (APNs 429) holds that recipient back but does not mark the sink throttled")
    func perRecipientThrottle() async throws {
        let clock = VirtualClock()
        // The sink's state is read while the notification waits for its retry (after a success it would be ready
        // anyway), so a per-device limit that wrongly throttled the sink shows here.
        let sinkBox = Mutex<RetryingSink<ScriptedPlatform>?>(nil)
        let stateWhileWaiting = Mutex<SinkState?>(nil)
        let recordingClock = clock.retryClock { stateWhileWaiting.withLock { $0 = sinkBox.withLock { $0 }?.state } }
        let platform = ScriptedPlatform { notification, attempt in
            attempt == 1 ? SinkFailure(.throttled, "429 TooManyRequests", retryAfter: .seconds(5), throttleScope: .recipient) : nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: RetryPolicy(jitter: 0), clock: recordingClock, logger: logger)
        sinkBox.withLock { $0 = sink }
        let log = OutcomeLog()
        try await running(sink) {
            let item = try notification(0, recipient: "busy-device")
            await sink.submit(item, completion: log.record(item.eventId))
            try await log.waitForCount(1)
        }
        #expect(log.all.first?.1 == .delivered(attempts: 2))
        #expect(clock.sleeps == [.seconds(5)])
        #expect(stateWhileWaiting.withLock { $0 } == .ready, "a per-device limit does not throttle the sink")
    }

    /// Cancelling `run` (the pipeline shutting down) answers what it held: the attempt in flight ends, the
    /// notifications no worker started are abandoned, and so is one submitted after `run` ended; none is left
    /// without its one outcome.
    @Test("cancelling run answers every notification held, and any submitted afterwards")
    func cancellingRunAnswersEverything() async throws {
        let platform = ScriptedPlatform { _, _ in
            try? await Task.sleep(for: .milliseconds(200))
            return nil
        }
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: RetryPolicy(), logger: logger)
        let log = OutcomeLog()
        let task = Task { await sink.run() }
        try await submit(3, to: sink, log: log, recipient: { _ in "same" })
        while platform.attempts.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        await task.value
        try await log.waitForCount(3)
        #expect(log.abandonedCount == 2, "\(log.all)")
        #expect(log.all.filter { $0.0 != "event-0" }.allSatisfy { if case .abandoned(let failure) = $0.1 { failure.detail.contains("shutting down") } else { false } })
        let late = try notification(9, recipient: "late")
        await sink.submit(late, completion: log.record(late.eventId))
        #expect(log.all.count == 4, "answered at once: the queue is closed")
        #expect(platform.attempts == ["event-0"])
    }

    /// Twenty notifications through a sink with a refusal limit of 5 over a platform answering `answer`, once all
    /// have an outcome.
    private func twentyThrough(
        _ answer: @escaping @Sendable (RenderedNotification, Int) async -> SinkFailure?
    ) async throws -> (log: OutcomeLog, sink: RetryingSink<ScriptedPlatform>, platform: ScriptedPlatform) {
        let platform = ScriptedPlatform(answer: answer)
        let sink = RetryingSink(sender: platform, concurrency: 1, policy: RetryPolicy(), refusalLimit: 5, logger: logger)
        let log = OutcomeLog()
        try await running(sink) {
            try await submit(20, to: sink, log: log)
            try await log.waitForCount(20)
        }
        return (log, sink, platform)
    }

    @Test("dead-token answers in a row with nothing ever accepted stop the sink instead of reporting every token dead")
    func refusalLimit() async throws {
        let (log, sink, platform) = try await twentyThrough { _, _ in SinkFailure(.invalidToken, "400 BadDeviceToken") }
        #expect(log.failedCount == 4, "the first four are reported dead")
        #expect(log.abandonedCount == 16, "the fifth stops the sink; it and the rest stay unsent")
        #expect(platform.attempts.count == 5)
        guard case .stopped(let reason) = sink.state else {
            Issue.record("expected the sink stopped, got \(sink.state)")
            return
        }
        #expect(reason.code == .auth)
        #expect(reason.detail.contains("5 device tokens in a row"))
    }

    /// A token reported no longer registered (APNs 410 `Unregistered`, FCM `UNREGISTERED`) was known to the sink's
    /// environment, topic and project: a campaign to a lapsed audience, whose first tokens are all stale, is not a
    /// wrong configuration, and bad tokens after such an answer are reported, not counted.
    @Test("tokens reported no longer registered show the configuration right: however many in a row, the sink goes on")
    func unregisteredTokensDoNotStopTheSink() async throws {
        let stale = try await twentyThrough { _, _ in SinkFailure(.invalidToken, "410 Unregistered", confirmsConfiguration: true) }
        #expect(stale.log.failedCount == 20)
        #expect(stale.sink.state == .ready)

        let mixed = try await twentyThrough { notification, _ in
            notification.eventId == "event-3"
                ? SinkFailure(.invalidToken, "410 Unregistered", confirmsConfiguration: true)
                : SinkFailure(.invalidToken, "400 BadDeviceToken")
        }
        #expect(mixed.log.failedCount == 20, "three bad tokens, then a stale one confirms the configuration")
        #expect(mixed.sink.state == .ready)
    }

    /// Found by review: a token the sender refuses without sending it (an FCM token routed to APNs) says nothing of the
    /// sink's environment or topic; fifty of them stopped the sink as a wrong configuration.
    @Test("tokens refused without being sent neither count towards the refusal limit nor reset it")
    func tokensNotSentDoNotCount() async throws {
        let unsent = try await twentyThrough { _, _ in SinkFailure(.invalidToken, "not an APNs device token", wasNotSent: true) }
        #expect(unsent.log.failedCount == 20)
        #expect(unsent.sink.state == .ready)

        let mixed = try await twentyThrough { notification, _ in
            ["event-2", "event-5"].contains(notification.eventId)
                ? SinkFailure(.invalidToken, "not an APNs device token", wasNotSent: true)
                : SinkFailure(.invalidToken, "400 BadDeviceToken")
        }
        #expect(mixed.log.failedCount == 6, "four refusals, two unsent between them, then the fifth refusal stops the sink")
        #expect(mixed.log.abandonedCount == 14)
        guard case .stopped = mixed.sink.state else {
            Issue.record("expected the sink stopped, got \(mixed.sink.state)")
            return
        }
    }

    @Test("dead tokens after an accepted notification are reported, however many")
    func refusalsAfterDelivery() async throws {
        let (log, sink, _) = try await twentyThrough { notification, _ in
            notification.eventId == "event-0" ? nil : SinkFailure(.invalidToken, "400 BadDeviceToken")
        }
        #expect(log.failedCount == 19)
        #expect(sink.state == .ready)
    }
}

