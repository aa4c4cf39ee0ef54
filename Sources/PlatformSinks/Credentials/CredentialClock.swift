import PipelineCore

/// The two clocks the sinks' credentials read.
///
/// A token states wall-clock times (a provider token's `iat`, an OAuth assertion's `iat` and `exp`), so those come
/// from the wall clock. How old a token is, and so when it is replaced, is measured on a monotonic clock: a step of
/// the system clock (NTP setting it at boot, a virtual machine resumed) must not keep a token in use past its life,
/// which APNs and FCM would refuse for the whole sink, nor make a fresh token look old.
struct CredentialClock: Sendable {
    /// The time a token states.
    var wall: @Sendable () -> Timestamp
    /// The time a token's age is measured on. The system's is `ContinuousClock`, which also counts the time the
    /// machine was suspended.
    var monotonic: @Sendable () -> ContinuousClock.Instant

    /// The system's clocks.
    static let system = CredentialClock(wall: { .now() }, monotonic: { .now })
}
