import Foundation
import LatchkeyCore

/// A store failure. Callers answer `unavailable` with 503 `temporarily_unavailable`, never with a
/// credential error (SECURITY.md I5).
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// A uniqueness rule was broken (for example a username that exists).
    case conflict(String)
    /// The store could not be reached or failed; the operation did not happen.
    case unavailable(String)
    /// The store's schema is newer than this build knows.
    case schemaTooNew(String)

    public var description: String {
        switch self {
        case .conflict(let message), .unavailable(let message), .schemaTooNew(let message): message
        }
    }
}

extension String {
    /// Whether the string holds a NUL character. Stores answer "no such row" for such a key:
    /// SQLite's C API would cut it at the NUL (`web\0evil` would find `web`) and PostgreSQL
    /// refuses it in `text` (SECURITY.md T35).
    public var hasNUL: Bool { utf8.contains(0) }
}

/// Everything the server keeps. Implementations (SQLite, PostgreSQL) pass one conformance suite.
/// A lookup key holding a NUL character (see ``Swift/String/hasNUL``) matches nothing.
///
/// Each method is one atomic operation. The operations that decide whether a credential may be
/// used exactly once (``redeemAuthorizationCode(codeHash:grant:tokens:at:)``,
/// ``rotateRefreshToken(hash:successors:at:)``, ``reissueWithinGrace(originalHash:retiredHash:successors:at:)``)
/// are conditional updates whose winner is decided by the database, so several server instances
/// may share one store.
public protocol Store: Sendable {
    // MARK: Scope catalogue
    func scopeCatalogue() async throws -> [ScopeDefinition]
    /// Adds the scope or replaces its description.
    func saveScope(_ scope: ScopeDefinition) async throws
    /// - Returns: whether the scope existed.
    func deleteScope(named name: String) async throws -> Bool

    // MARK: Users
    /// - Throws: ``StoreError/conflict(_:)`` when the username is taken.
    func insertUser(_ user: User) async throws
    func user(id: String) async throws -> User?
    func user(username: String) async throws -> User?
    func users() async throws -> [User]
    /// Deletes the user with their sessions, consents, grants, codes and tokens.
    func deleteUser(username: String) async throws -> Bool
    /// Sets the password hash and ends the user's browser sessions.
    func setPasswordHash(username: String, passwordHash: String) async throws -> Bool

    // MARK: Clients
    /// - Throws: ``StoreError/conflict(_:)`` when the id is taken.
    func insertClient(_ client: Client) async throws
    func client(id: String) async throws -> Client?
    func clients() async throws -> [Client]
    /// Deletes the client with its consents, grants, codes, tokens and pending requests.
    func deleteClient(id: String) async throws -> Bool
    /// Replaces a confidential client's secret hash; the old secret stops working at once.
    func setClientSecretHash(id: String, secretHash: String) async throws -> Bool

    // MARK: Browser sessions and pending requests
    func insertSession(_ session: BrowserSession) async throws
    func session(idHash: String) async throws -> BrowserSession?
    /// Replaces a session by a new one (a fresh identifier after sign-in), moving the old session's
    /// pending requests to it.
    func replaceSession(oldIDHash: String?, with session: BrowserSession) async throws
    /// Records that the session was used at `at` (its idle timeout counts from there).
    func touchSession(idHash: String, at: Date) async throws
    /// Ends a session (sign-out) with its pending requests.
    func deleteSession(idHash: String) async throws
    func insertPendingAuthorization(_ pending: PendingAuthorization) async throws
    func pendingAuthorization(id: String) async throws -> PendingAuthorization?
    /// Removes and returns a pending request, so a consent can be decided only once.
    func takePendingAuthorization(id: String) async throws -> PendingAuthorization?

    // MARK: Consent
    func consent(userID: String, clientID: String) async throws -> ConsentRecord?
    func saveConsent(_ consent: ConsentRecord) async throws

    // MARK: Codes, grants and tokens
    func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws
    func authorizationCode(hash: String) async throws -> AuthorizationCodeRecord?
    /// Marks the code consumed and stores the grant and its tokens, all or nothing.
    /// - Returns: `false`, changing nothing, when the code was already consumed.
    func redeemAuthorizationCode(codeHash: String, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    func token(hash: String) async throws -> TokenRecord?
    /// Marks an unrotated, unrevoked refresh token rotated to `successors`' refresh token and
    /// stores the successors, all or nothing.
    /// - Returns: `false`, changing nothing, when the token was already rotated or revoked.
    func rotateRefreshToken(hash: String, successors: [TokenRecord], at: Date) async throws -> Bool
    /// Within the grace window: retires the unused successor `retiredHash` (and the access tokens
    /// issued with it), points the original at the new successor and stores `successors`.
    /// - Returns: `false`, changing nothing, when the successor was used or revoked meanwhile.
    func reissueWithinGrace(originalHash: String, retiredHash: String, successors: [TokenRecord], at: Date)
        async throws -> Bool
    /// Revokes the grant and every token in it.
    func revokeGrant(id: String, at: Date) async throws
    /// Stores a grant with its tokens (implicit and client-credentials grants), all or nothing.
    func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws
    /// Revokes one token.
    func revokeToken(hash: String, at: Date) async throws
    /// The user's grants that are not revoked and still hold an active token, newest first.
    func activeGrants(userID: String, at: Date) async throws -> [GrantRecord]
    /// Ends everything a user granted a client: every grant and its tokens, and the remembered consent.
    func revokeAuthorization(userID: String, clientID: String, at: Date) async throws

    // MARK: Throttling (shared by every instance)
    /// Counts one failure against `key`: in its current window if that has not ended at `at`,
    /// else in a new window of `window` seconds. - Returns: the window after counting.
    func recordFailure(key: String, at: Date, window: TimeInterval) async throws -> ThrottleWindow
    /// The failures counted against `key` in a window that has not ended at `at`, if any.
    func failures(key: String, at: Date) async throws -> ThrottleWindow?
    /// Forgets the failures counted against `key`.
    func clearFailures(key: String) async throws
    /// The client with `id`, and the failures counted in a window open at `at` against `knownKey`
    /// when the client exists or `unknownKey` when it does not: client authentication needs both
    /// on every request, so they come in one read.
    func clientAndFailures(id: String, knownKey: String, unknownKey: String, at: Date) async throws -> (Client?, ThrottleWindow?)

    // MARK: Housekeeping
    /// Deletes, in small batches, sessions, pending requests and throttle windows past their expiry, and codes and
    /// tokens past their expiry by more than `retention` (kept that long so a replay is still
    /// recognised). - Returns: how many rows went.
    func purgeExpired(at: Date, retention: TimeInterval) async throws -> Int
}
