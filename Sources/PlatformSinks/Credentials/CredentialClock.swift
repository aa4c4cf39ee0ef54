import PipelineCore

/// The two clocks the sinks' credentials read.
///
/// A token states wall-clock times (a provider token's `iat`, an OAuth assertion's `iat` and `exp`), so those come
/// from the wall clock. A token's age, which decides when it is replaced, is the longer of what the two clocks
/// measured since it was made (``age(since:)``): each of them alone can make an old token look fresh, which APNs and
/// FCM refuse for the whole sink. The wall clock can be set back (NTP at boot); the monotonic one stands still while a
/// virtual machine is paused by its host (the guest's clocks are restored on resume, and only the wall clock is then
/// set forward). A wall clock set forward makes a token look older than it is: it is replaced once, early.
struct CredentialClock: Sendable {
    /// Both clocks' times at one instant.
    struct Reading: Sendable {
        var wall: Timestamp
        var monotonic: ContinuousClock.Instant
    }

    /// The time a token states.
    var wall: @Sendable () -> Timestamp
    /// The other measure of a token's age. The system's is `ContinuousClock`, which also counts the time the machine
    /// was suspended.
    var monotonic: @Sendable () -> ContinuousClock.Instant

    /// The system's clocks.
    static let system = CredentialClock(wall: { .now() }, monotonic: { .now })

    /// Both clocks now.
    func now() -> Reading {
        Reading(wall: wall(), monotonic: monotonic())
    }

    /// How long ago `reading` was taken: the longer of the two clocks' measures.
    func age(since reading: Reading) -> Duration {
        let now = self.now()
        let wallAge = Duration.seconds(now.wall.secondsSince1970 - reading.wall.secondsSince1970)
        return max(now.monotonic - reading.monotonic, wallAge)
    }
}
