import Crypto
import PipelineCore
import PushSinks
import Synchronization

/// APNs provider authentication tokens: an ES256 JWT (`kid` = key id, `iss` = team id, `iat`) signed with the
/// team's .p8 key. One token is reused for every request and replaced after ``refreshInterval``, which Apple wants
/// between 20 and 60 minutes: APNs refuses tokens older than an hour and answers `TooManyProviderTokenUpdates`
/// to tokens replaced more often than every 20 minutes. A token's age is the longer of the wall clock's and the
/// monotonic clock's measures (``CredentialClock/age(since:)``).
final class APNsProviderToken: Sendable {
    /// The shortest and longest refresh intervals allowed.
    static let refreshBounds: ClosedRange<Int64> = (20 * 60)...(50 * 60)

    private struct Current {
        var value: String
        var issuedAt: CredentialClock.Reading
    }

    let keyID: String
    let teamID: String
    /// Seconds between two tokens, within ``refreshBounds``.
    let refreshInterval: Int64
    private let key: P256.Signing.PrivateKey
    private let clock: CredentialClock
    private let current = Mutex<Current?>(nil)

    /// Creates a token source.
    ///
    /// - Throws: ``SinkConfigurationError`` (under `key`) when the key is not a P-256 private key in PEM.
    init(
        p8 pem: String,
        keyID: String,
        teamID: String,
        refreshMinutes: Int,
        configurationKey: String,
        clock: CredentialClock = .system
    ) throws(SinkConfigurationError) {
        do {
            self.key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SinkConfigurationError(key: configurationKey, reason: "not an APNs auth key (.p8, a P-256 private key in PEM)")
        }
        self.keyID = keyID
        self.teamID = teamID
        self.refreshInterval = min(max(Int64(refreshMinutes) * 60, Self.refreshBounds.lowerBound), Self.refreshBounds.upperBound)
        self.clock = clock
    }

    /// The token to send now: the current one, or a new one once the current one is ``refreshInterval`` old.
    func token() throws -> String {
        try current.withLock { current in
            if let current, clock.age(since: current.issuedAt) < .seconds(refreshInterval) {
                return current.value
            }
            let time = clock.now()
            let value = try make(issuedAt: time.wall)
            current = Current(value: value, issuedAt: time)
            return value
        }
    }

    /// Replaces `token` after APNs said it expired, unless it is younger than the 20 minutes APNs requires
    /// between updates.
    ///
    /// - Returns: whether the token was dropped (the next ``token()`` makes a new one).
    func expire(_ token: String) -> Bool {
        current.withLock { current in
            guard let existing = current, existing.value == token else { return true }
            guard clock.age(since: existing.issuedAt) >= .seconds(Self.refreshBounds.lowerBound) else { return false }
            current = nil
            return true
        }
    }

    private func make(issuedAt: Timestamp) throws -> String {
        try JSONWebToken.make(
            header: ["alg": "ES256", "kid": .string(keyID)],
            claims: ["iss": .string(teamID), "iat": .int(Int(issuedAt.secondsSince1970))]
        ) { input in
            Array(try key.signature(for: input).rawRepresentation)
        }
    }
}
