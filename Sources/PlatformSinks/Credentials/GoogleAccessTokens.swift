import Foundation
import NIOHTTP1
import PipelineCore
import PushSinks
import Synchronization

/// OAuth 2.0 access tokens for FCM from a service account: a signed JWT assertion exchanged at the key's
/// `token_uri`, cached, and refreshed five minutes before it expires (or at half its life when that is shorter).
/// Concurrent callers share one exchange (a cancelled caller stops waiting for it at once); while a refresh runs (or
/// after it failed) the cached token is used until it really expires, so a slow or failing token endpoint does not
/// hold sends up. A token's age is the longer of the wall clock's and the monotonic clock's measures
/// (``CredentialClock/age(since:)``).
actor GoogleAccessTokens {
    /// The scope FCM HTTP v1 needs.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    struct AccessToken: Sendable {
        var value: String
        /// When the exchange that got it started.
        var obtainedAt: CredentialClock.Reading
        /// The age at which it is refreshed.
        var refreshAge: Duration
        /// The age at which it expires.
        var lifetime: Duration
    }

    private let key: ServiceAccountKey
    private let http: SinkHTTPClient
    private let tokenURL: String
    private let clock: CredentialClock
    private var cached: AccessToken?
    private var exchange: Task<Result<AccessToken, SinkFailure>, Never>?
    /// After a failed background refresh, the next one waits until then.
    private var nextRefresh: ContinuousClock.Instant?

    init(key: ServiceAccountKey, http: SinkHTTPClient, tokenURL: String? = nil, clock: CredentialClock = .system) {
        self.key = key
        self.http = http
        self.tokenURL = tokenURL ?? key.tokenURI
        self.clock = clock
    }

    /// A valid access token, exchanging a new assertion when the cached one is due for refresh.
    func token() async -> Result<AccessToken, SinkFailure> {
        if let cached {
            let age = clock.age(since: cached.obtainedAt)
            if age < cached.refreshAge { return .success(cached) }
            if age < cached.lifetime {
                // Due for a refresh but still valid: refresh alongside, keep using it.
                if exchange == nil, nextRefresh.map({ clock.monotonic() >= $0 }) ?? true { _ = startExchange() }
                return .success(cached)
            }
        }
        return await Self.result(of: exchange ?? startExchange())
    }

    /// The exchange's result, or, as soon as the calling task is cancelled (the sink shutting down), a failure
    /// without it: the exchange is shared by every caller waiting for a token and can take up to the request
    /// timeout, so it goes on for the others, but a cancelled send does not wait for it.
    private nonisolated static func result(
        of exchange: Task<Result<AccessToken, SinkFailure>, Never>
    ) async -> Result<AccessToken, SinkFailure> {
        let answer = FirstAnswer()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                answer.wait(continuation)
                Task { answer.give(await exchange.value) }
            }
        } onCancel: {
            answer.give(.failure(SinkFailure(.unavailable, "cancelled while waiting for an access token (shutting down)")))
        }
    }

    /// The first of two answers for one waiting caller (the exchange's result, or its cancellation); the other is
    /// dropped.
    private final class FirstAnswer: Sendable {
        private enum State {
            case empty
            case waiting(CheckedContinuation<Result<AccessToken, SinkFailure>, Never>)
            case answered(Result<AccessToken, SinkFailure>)
            case done
        }

        private let state = Mutex(State.empty)

        /// Parks the caller until the first answer, or resumes it at once when that came already.
        func wait(_ continuation: CheckedContinuation<Result<AccessToken, SinkFailure>, Never>) {
            let early: Result<AccessToken, SinkFailure>? = state.withLock { state in
                guard case .answered(let result) = state else {
                    state = .waiting(continuation)
                    return nil
                }
                state = .done
                return result
            }
            if let early { continuation.resume(returning: early) }
        }

        /// Gives an answer: the caller's, if it is the first.
        func give(_ result: Result<AccessToken, SinkFailure>) {
            let waiting: CheckedContinuation<Result<AccessToken, SinkFailure>, Never>? = state.withLock { state in
                switch state {
                case .empty:
                    state = .answered(result)
                    return nil
                case .waiting(let continuation):
                    state = .done
                    return continuation
                case .answered, .done:
                    return nil
                }
            }
            waiting?.resume(returning: result)
        }
    }

    private func startExchange() -> Task<Result<AccessToken, SinkFailure>, Never> {
        let task = Task { await self.exchangeAndKeep() }
        exchange = task
        return task
    }

    private func exchangeAndKeep() async -> Result<AccessToken, SinkFailure> {
        let result = await exchangeAssertion()
        switch result {
        case .success(let token):
            cached = token
            nextRefresh = nil
        case .failure:
            nextRefresh = clock.monotonic() + .seconds(10)
        }
        exchange = nil
        return result
    }

    /// Forgets `token` (FCM refused it): the next call exchanges a new one.
    func invalidate(_ token: String) {
        if cached?.value == token { cached = nil }
    }

    private func exchangeAssertion() async -> Result<AccessToken, SinkFailure> {
        let obtainedAt = clock.now()
        let assertion: String
        do {
            assertion = try key.assertion(scope: Self.scope, now: obtainedAt.wall)
        } catch {
            return .failure(SinkFailure(.auth, "signing the OAuth assertion failed: \(error)"))
        }
        let form = "grant_type=\(Self.formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(Self.formEncoded(assertion))"
        let reply: HTTPReply
        do {
            reply = try await http.send(.POST, tokenURL, headers: [("content-type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
        } catch {
            return .failure(SinkHTTPClient.unavailable(error, url: tokenURL))
        }
        let object = reply.jsonObject
        switch reply.status {
        case 200:
            guard let value = object?["access_token"]?.stringValue, !value.isEmpty else {
                return .failure(SinkFailure(.unavailable, "the token endpoint answered 200 without an access_token"))
            }
            let lifetime = Int64(object?["expires_in"]?.integerValue ?? 3600)
            let margin = lifetime > 600 ? 300 : lifetime / 2
            return .success(
                AccessToken(
                    value: value,
                    obtainedAt: obtainedAt,
                    refreshAge: .seconds(lifetime - margin),
                    lifetime: .seconds(lifetime)
                )
            )
        case 429:
            return .failure(SinkFailure(.throttled, "token endpoint: 429 \(reply.bodyText.prefix(200))", retryAfter: reply.retryAfter()))
        case 500...:
            return .failure(SinkFailure(.unavailable, "token endpoint: \(reply.status) \(reply.bodyText.prefix(200))", retryAfter: reply.retryAfter()))
        case 300..<400:
            return .failure(SinkFailure(.auth, "the token endpoint answered \(reply.unexpectedStatus(configurationKey: "fcm.tokenUrl"))"))
        default:
            // invalid_grant, invalid_client, unauthorized_client: the key is revoked, disabled or wrong.
            let error = object?["error"]?.stringValue ?? "HTTP \(reply.status)"
            let description = object?["error_description"]?.stringValue.map { ": \($0)" } ?? ""
            return .failure(SinkFailure(.auth, "the token endpoint refused the service account \(key.clientEmail) (\(error)\(description))"))
        }
    }

    private static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
