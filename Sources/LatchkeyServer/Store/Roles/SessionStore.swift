import Foundation
import LatchkeyCore

/// Browser sessions, and the authorization requests waiting in them for sign-in and consent.
public protocol SessionStore: Sendable {
    func insertSession(_ session: BrowserSession) async throws
    func session(idHash: SessionIDHash) async throws -> BrowserSession?
    /// Replaces a session by a new one (a fresh identifier after sign-in), moving the old session's
    /// pending requests to it.
    func replaceSession(oldIDHash: SessionIDHash?, with session: BrowserSession) async throws
    /// Records that the session was used at `at` (its idle timeout counts from there) and moves
    /// its end to `expiresAt`, so the purge deletes a session once it has gone unused too long.
    func touchSession(idHash: SessionIDHash, at: Date, expiresAt: Date) async throws
    /// Ends a session (sign-out) with its pending requests.
    func deleteSession(idHash: SessionIDHash) async throws
    /// The user's signed-in sessions, newest first (the admin console lists them).
    func sessions(userID: UserID) async throws -> [BrowserSession]
    /// Ends every session of the user with their pending requests (signed out everywhere).
    func deleteSessions(userID: UserID) async throws
    func insertPendingAuthorization(_ pending: PendingAuthorization) async throws
    func pendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization?
    /// Removes and returns a pending request, so a consent can be decided only once.
    func takePendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization?
}
