import PushSinks
import TestSupport
import Synchronization
import Testing

@Suite("Retry policy and retrying delivery")
struct RetryPolicyTests {
    let policy = RetryPolicy(initialBackoff: .milliseconds(500), maxBackoff: .seconds(8), jitter: 0.2, deadline: .seconds(60))

    @Test("backoff doubles from the initial wait up to the maximum; jitter adds at most its fraction")
    func backoff() {
        let waits = (1...7).map { policy.delay(afterAttempts: $0, retryAfter: nil, random: 0) }
        #expect(waits == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
        #expect(policy.delay(afterAttempts: 3, retryAfter: nil, random: 0.999_999) < .milliseconds(2_400))
        #expect(policy.delay(afterAttempts: 3, retryAfter: nil, random: 0.5) == .milliseconds(2_200))
    }

    @Test("Retry-After wins over the backoff, also when longer than the maximum; jitter on top; never below the first backoff")
    func retryAfter() {
        #expect(policy.delay(afterAttempts: 1, retryAfter: .seconds(7), random: 0) == .seconds(7))
        #expect(policy.delay(afterAttempts: 1, retryAfter: .seconds(7), random: 0.5) == .milliseconds(7_700))
        #expect(policy.delay(afterAttempts: 9, retryAfter: .seconds(30), random: 0) == .seconds(30))
        #expect(policy.delay(afterAttempts: 1, retryAfter: .zero, random: 0) == .milliseconds(500), "Retry-After: 0 is no reason to hammer")
    }

    /// FCM asks for both: honour `Retry-After`, and back off exponentially. A platform answering the same short
    /// `Retry-After` again and again was retried at that pace for good (found by review against FCM's error codes).
    @Test("the same Retry-After answered again and again waits the backoff once that is longer")
    func retryAfterAndTheBackoff() {
        let waits = (1...6).map { policy.delay(afterAttempts: $0, retryAfter: .seconds(1), random: 0) }
        #expect(waits == [.seconds(1), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8)])
    }

    /// FCM asks for "exponential backoff with a minimum initial delay of 1 minute" after QUOTA_EXCEEDED, which often
    /// comes without a Retry-After; a 0.5 s backoff made about seven pointless attempts per message (found by review).
    @Test("a sink-wide throttle without Retry-After waits the throttled backoff; one recipient's throttle backs off as usual")
    func throttleWithoutRetryAfter() {
        let sinkWide = SinkFailure(.throttled, "FCM 429 QUOTA_EXCEEDED")
        #expect(policy.sinkWideHold(after: sinkWide) == .seconds(60))
        #expect(policy.delay(after: sinkWide, attempts: 1, random: 0) == .seconds(60))
        #expect(policy.sinkWideHold(after: SinkFailure(.throttled, "429", retryAfter: .seconds(5))) == .seconds(5))
        #expect(policy.sinkWideHold(after: SinkFailure(.throttled, "429", retryAfter: .zero)) == .milliseconds(500), "at least the first backoff")
        let oneDevice = SinkFailure(.throttled, "APNs 429 TooManyRequests", throttleScope: .recipient)
        #expect(policy.sinkWideHold(after: oneDevice) == nil)
        #expect(policy.delay(after: oneDevice, attempts: 1, random: 0) == .milliseconds(500))
        #expect(policy.sinkWideHold(after: SinkFailure(.unavailable, "503")) == nil)
        let maybeOneDevice = SinkFailure(.throttled, "FCM 429 QUOTA_EXCEEDED", throttleScope: .sinkOrRecipient)
        #expect(policy.sinkWideHold(after: maybeOneDevice) == nil, "RetryingSink decides, from the other recipients' answers")
        #expect(policy.delay(after: maybeOneDevice, attempts: 1, random: 0) == .milliseconds(500))
    }

    @Test("unavailable attempts are retried with growing waits until one succeeds")
    func retriesUntilSuccess() async {
        let clock = VirtualClock()
        let result = await RetryingDelivery.run(policy: policy, clock: clock.retryClock, random: { 0 }) { attempt in
            attempt < 4 ? SinkFailure(.unavailable, "503") : nil
        }
        #expect(result == .delivered(attempts: 4))
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1), .seconds(2)])
    }

    @Test("a throttled answer waits exactly Retry-After before the next attempt")
    func honoursRetryAfter() async {
        let clock = VirtualClock()
        let told = Mutex<[Duration]>([])
        let result = await RetryingDelivery.run(
            policy: policy,
            clock: clock.retryClock,
            random: { 0 },
            willRetry: { failure, wait in
                #expect(failure.code == .throttled)
                told.withLock { $0.append(wait) }
            },
            attempt: { attempt in attempt == 1 ? SinkFailure(.throttled, "429", retryAfter: .seconds(12)) : nil }
        )
        #expect(result == .delivered(attempts: 2))
        #expect(clock.sleeps == [.seconds(12)])
        #expect(told.withLock { $0 } == [.seconds(12)])
    }

    @Test("failures retrying cannot help end at once, with the attempt count", arguments: [
        SinkFailure.Code.invalidToken, .rejectedByPlatform, .payloadTooLarge, .auth,
    ])
    func finalFailures(code: SinkFailure.Code) async {
        let clock = VirtualClock()
        let result = await RetryingDelivery.run(policy: policy, clock: clock.retryClock) { _ in SinkFailure(code, "refused") }
        #expect(result == .failed(SinkFailure(code, "refused", attempts: 1)))
        #expect(clock.sleeps.isEmpty)
    }

    @Test("past the deadline the last reason is final, with the attempts and elapsed time in the detail")
    func deadline() async {
        let clock = VirtualClock()
        let result = await RetryingDelivery.run(policy: policy, clock: clock.retryClock, random: { 0 }) { _ in
            clock.advance(by: .seconds(1))  // each attempt takes a second (a timeout)
            return SinkFailure(.unavailable, "connection refused")
        }
        guard case .failed(let failure) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(failure.code == .unavailable)
        // Attempts take 1 s and waits 0.5, 1, 2, 4, 8, 8, 8, 8, 8 s: the tenth attempt ends at 57.5 s, and another
        // 8 s wait would pass the 60 s deadline.
        #expect(failure.attempts == 10)
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8), .seconds(8), .seconds(8)])
        #expect(failure.detail.contains("gave up after 10 attempts over 57.5 s: the next was due in 8.0 s, past the retry deadline of 60.0 s"), "\(failure.detail)")
        #expect(clock.now <= .seconds(60))
    }

    @Test("a Retry-After past the deadline is given up at once, and the detail says what the platform asked for")
    func retryAfterPastTheDeadline() async {
        let clock = VirtualClock()
        let result = await RetryingDelivery.run(policy: RetryPolicy(jitter: 0, deadline: .seconds(600)), clock: clock.retryClock) { _ in
            SinkFailure(.throttled, "FCM 429 QUOTA_EXCEEDED", retryAfter: .seconds(3600))
        }
        guard case .failed(let failure) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(clock.sleeps.isEmpty)
        #expect(failure.detail.contains("(Retry-After 3600.0 s), past the retry deadline of 600.0 s"), "\(failure.detail)")
    }

    /// The pipeline shutting down cancels the attempt in flight (the HTTP request ends with a cancellation error):
    /// that is no answer of the platform, and the notification is sent again after the restart, so it must not end
    /// as failed, even when another wait would pass the deadline; a `push.failed` written then would contradict the
    /// outcome of the send after the restart.
    @Test("an attempt interrupted by cancellation ends the delivery as cancelled, also at the deadline")
    func cancelledAttemptAtTheDeadline() async {
        let clock = VirtualClock()
        let policy = RetryPolicy(initialBackoff: .seconds(1), jitter: 0, deadline: .seconds(10))
        let started = Mutex(false)
        let task = Task {
            await RetryingDelivery.run(policy: policy, clock: clock.retryClock, random: { 0 }) { _ in
                clock.advance(by: .seconds(10))
                started.withLock { $0 = true }
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
                return SinkFailure(.unavailable, "no answer: cancelled")
            }
        }
        while !started.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
        task.cancel()
        let result = await task.value
        #expect(result == .cancelled(SinkFailure(.unavailable, "no answer: cancelled", attempts: 1)))
        #expect(clock.sleeps.isEmpty)
    }

    @Test("a cancelled wait ends the delivery as cancelled, not failed")
    func cancellation() async {
        let policy = RetryPolicy(initialBackoff: .seconds(30), deadline: .seconds(600))
        let task = Task {
            await RetryingDelivery.run(policy: policy, clock: .continuous) { _ in SinkFailure(.unavailable, "down") }
        }
        try? await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let result = await task.value
        #expect(result == .cancelled(SinkFailure(.unavailable, "down", attempts: 1)))
    }
}
