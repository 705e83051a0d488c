import Foundation
import LatchkeyCore

/// A logout token waiting to go to an app (OpenID Connect Back-Channel Logout 1.0): queued in the
/// same transaction that ends the session or the user's access, so a crash loses none, and sent
/// by ``BackChannelLogout`` on whichever instance claims it.
public struct LogoutDelivery: Sendable, Equatable {
    public var id: String
    public var clientID: ClientID
    /// `sub`.
    public var userID: UserID
    /// `sid`: the session that ended; `nil` when the user's access ended (every session at once).
    public var sid: String?
    public var createdAt: Date
    /// Attempts begun, counted as each is claimed.
    public var attempts: Int
    public var lastError: String?

    public init(
        id: String, clientID: ClientID, userID: UserID, sid: String?, createdAt: Date, attempts: Int = 0,
        lastError: String? = nil
    ) {
        self.id = id
        self.clientID = clientID
        self.userID = userID
        self.sid = sid
        self.createdAt = createdAt
        self.attempts = attempts
        self.lastError = lastError
    }
}

/// The back-channel logouts queued, and the sign-out that queues them. The user-wide endings
/// (disable, a new password, a reset, deletion) queue theirs in their own statements
/// (``AccessRevocation``).
public protocol LogoutDeliveryStore: Sendable {
    /// Ends a signed-in session as a sign-out does (its pending requests with it) and, in the same
    /// transaction, queues a logout for each app with a `backchannel_logout_uri` that has a grant
    /// from that session. A session already ended queues nothing.
    func signOutSession(idHash: SessionIDHash, at: Date) async throws
    /// Claims up to `limit` logouts due at `at` until `leaseUntil`, counting the attempt: of two
    /// instances claiming at once, each row goes to one.
    func claimDueLogouts(at: Date, leaseUntil: Date, limit: Int) async throws -> [LogoutDelivery]
    /// Records a delivery; `delivered` false when given up, with `error`. Only while the claim
    /// made until `claimedUntil` is still the row's.
    func finishLogout(id: String, claimedUntil: Date, at: Date, delivered: Bool, error: String?) async throws
    func retryLogout(id: String, claimedUntil: Date, nextAttemptAt: Date, error: String) async throws
    /// The logouts not yet finished, oldest first (for tests and operators).
    func pendingLogouts() async throws -> [LogoutDelivery]
}
