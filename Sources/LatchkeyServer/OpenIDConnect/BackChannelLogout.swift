import Foundation
import LatchkeyCore

/// Sends logout tokens to apps over the network. `latchkey serve` uses its guarded fetcher: an
/// app's `backchannel_logout_uri` is an address the app chose, checked as any other.
public protocol BackChannelNotifying: Sendable {
    /// POSTs `logout_token=TOKEN` (`application/x-www-form-urlencoded`) to `url`.
    /// - Returns: the HTTP status of the answer.
    /// - Throws: ``FetchRefusal`` when nothing was sent or no answer came.
    func postLogoutToken(_ token: String, to url: URL) async throws(FetchRefusal) -> Int
}

/// What became of one attempt to deliver a logout.
public enum LogoutDeliveryOutcome: Sendable, Equatable {
    case delivered
    /// The app could not be reached or answered a failure it may recover from: try again later.
    case tryAgain(String)
    /// The app refused the token (a 4xx) or no longer asks for logouts: given up.
    case gaveUp(String)
}

/// OpenID Connect Back-Channel Logout 1.0: the queued logouts (``LogoutDeliveryStore``) sent as
/// logout tokens (§2.4) to each app's `backchannel_logout_uri` (§2.5), by whichever instance
/// claims them, as often as the sender service runs ``deliverDue(limit:)``.
///
/// A logout token is signed like the app's ID tokens, typed `logout+jwt`, with `iss`, `aud` (the
/// app), `iat`, `exp` two minutes on, a fresh `jti`, `sub`, `sid` when one session ended, and the
/// back-channel logout event; never a `nonce`. It is made again at each attempt. An attempt that
/// fails is retried as the mail outbox retries (10 s, doubled each time, at most an hour) until a
/// day has passed since the session ended; a 4xx answer other than 408 and 429 is final (§2.8: the
/// app refused the token).
public struct BackChannelLogout: Sendable, ServerContextual {
    let store: any LogoutDeliveryStore & ClientStore
    let signingKeys: SigningKeyring
    let notifier: any BackChannelNotifying
    let context: ServerContext

    /// How long a claimed logout is left to its sender before another may take it.
    public static let lease: TimeInterval = 60
    /// How long after the session ended a logout that cannot be delivered is given up.
    public static let giveUpAfter: TimeInterval = 24 * 3600
    /// How long a logout token is good for.
    public static let tokenLifetime: TimeInterval = 120
    /// The member of `events` that makes a JWT a logout token (§2.4).
    public static let event = "http://schemas.openid.net/event/backchannel-logout"
    /// The `typ` of a logout token (§2.4, RFC 8725 §3.11).
    public static let tokenType = "logout+jwt"

    public init(
        store: any LogoutDeliveryStore & ClientStore, signingKeys: SigningKeyring, notifier: any BackChannelNotifying,
        context: ServerContext
    ) {
        self.store = store
        self.signingKeys = signingKeys
        self.notifier = notifier
        self.context = context
    }

    /// Claims due logouts one at a time (at most `limit`), delivers each and records what happened.
    /// - Returns: each logout handled with its outcome; none when nothing was due.
    public func deliverDue(limit: Int = 10) async throws -> [(LogoutDelivery, LogoutDeliveryOutcome)] {
        var handled: [(LogoutDelivery, LogoutDeliveryOutcome)] = []
        while handled.count < limit, !Task.isCancelled {
            let at = now
            let lease = at.addingTimeInterval(Self.lease)
            guard let delivery = try await store.claimDueLogouts(at: at, leaseUntil: lease, limit: 1).first else { break }
            let outcome = await deliver(delivery, at: at)
            try await record(outcome, for: delivery, claimedUntil: lease)
            handled.append((delivery, outcome))
        }
        return handled
    }

    private func deliver(_ delivery: LogoutDelivery, at: Date) async -> LogoutDeliveryOutcome {
        if at.timeIntervalSince(delivery.createdAt) > Self.giveUpAfter {
            return .gaveUp(delivery.lastError ?? "Not delivered within a day of the sign-out.")
        }
        let client: Client?
        do { client = try await store.client(id: delivery.clientID) } catch {
            return .tryAgain("The store could not be read.")
        }
        guard let client, let address = client.backchannelLogoutURI, let url = URL(string: address) else {
            return .gaveUp("The app no longer has a back-channel logout URI.")
        }
        let token: String
        do { token = try await logoutToken(for: delivery, client: client, at: at) } catch {
            return .tryAgain("The logout token could not be signed.")
        }
        do {
            let status = try await notifier.postLogoutToken(token, to: url)
            switch status {
            case 200..<300: return .delivered
            case 408, 429, 500...: return .tryAgain("The app answered \(status).")
            default: return .gaveUp("The app answered \(status).")
            }
        } catch {
            return .tryAgain(error.description)
        }
    }

    /// The logout token for `delivery` (§2.4), signed with the key of the app's ID tokens.
    func logoutToken(for delivery: LogoutDelivery, client: Client, at: Date) async throws -> String {
        let issuedAt = Int(at.timeIntervalSince1970)
        var claims = #"{"iss":"# + JSONText.quote(issuer) + #","sub":"# + JSONText.quote(delivery.userID.rawValue)
        claims += #","aud":"# + JSONText.quote(client.id.rawValue) + #","iat":"# + String(issuedAt)
        claims += #","exp":"# + String(issuedAt + Int(Self.tokenLifetime))
        claims += #","jti":"# + JSONText.quote(RandomToken.randomBase64URL(byteCount: 16))
        if let sid = delivery.sid { claims += #","sid":"# + JSONText.quote(sid) }
        claims += #","events":{"# + JSONText.quote(Self.event) + ":{}}}"
        return try await signingKeys.signer(for: client.idTokenSigningAlgorithm, at: at)
            .sign(payloadJSON: claims, type: Self.tokenType)
    }

    private func record(_ outcome: LogoutDeliveryOutcome, for delivery: LogoutDelivery, claimedUntil lease: Date) async throws {
        let at = now
        var metadata: [String: String] = ["client_id": delivery.clientID.rawValue, "user_id": delivery.userID.rawValue]
        metadata["attempt"] = String(delivery.attempts)
        switch outcome {
        case .delivered:
            try await store.finishLogout(id: delivery.id, claimedUntil: lease, at: at, delivered: true, error: nil)
            event(.backchannelLogoutDelivered, metadata.mapValues { "\($0)" })
        case .gaveUp(let error):
            try await store.finishLogout(id: delivery.id, claimedUntil: lease, at: at, delivered: false, error: error)
            metadata["reason"] = error
            event(.backchannelLogoutFailed, metadata.mapValues { "\($0)" })
        case .tryAgain(let error):
            let next = at.addingTimeInterval(MailOutbox.retryDelay(afterAttempt: delivery.attempts))
            if next.timeIntervalSince(delivery.createdAt) > Self.giveUpAfter {
                try await store.finishLogout(id: delivery.id, claimedUntil: lease, at: at, delivered: false, error: error)
                metadata["reason"] = error
                event(.backchannelLogoutFailed, metadata.mapValues { "\($0)" })
            } else {
                try await store.retryLogout(id: delivery.id, claimedUntil: lease, nextAttemptAt: next, error: error)
            }
        }
    }
}
