import Foundation
import LatchkeyCore

// Back-channel logouts waiting to go (LogoutDeliveryStore).
extension SQLDatabase {
    public func signOutSession(idHash: SessionIDHash, at: Date) async throws {
        let sid: SQLStatement = "(SELECT s.sid FROM sessions s WHERE s.id_hash = \(idHash))"
        _ = try await write([
            // The session's row first, locked: of two sign-outs at once, the second waits, then
            // finds it gone and queues nothing.
            .run("UPDATE sessions SET last_seen_at = last_seen_at WHERE id_hash = \(idHash)"),
            .run(LogoutQueue.enqueue(session: idHash, at: at)),
            // A code approved in the session and not yet redeemed would give an app an ID token
            // for a session that has ended, and no logout for it.
            .run("DELETE FROM authorization_codes WHERE sid = \(sid) AND consumed_at IS NULL"),
            .run("DELETE FROM pending_authorizations WHERE session_id_hash = \(idHash)"),
            .run("DELETE FROM sessions WHERE id_hash = \(idHash)"),
        ])
    }

    public func claimDueLogouts(at: Date, leaseUntil: Date, limit: Int) async throws -> [LogoutDelivery] {
        // As the mail outbox's claim: the condition again on each row as it is updated, so a row
        // another instance has just claimed is skipped.
        let free: SQLStatement =
            "finished_at IS NULL AND next_attempt_at <= \(at) AND (leased_until IS NULL OR leased_until <= \(at))"
        return try await returning(
            """
            UPDATE logout_deliveries SET leased_until = \(leaseUntil), attempts = attempts + 1
            WHERE id IN (SELECT id FROM logout_deliveries WHERE \(free) ORDER BY next_attempt_at, id LIMIT \(limit))
                AND \(free)
            RETURNING id, client_id, user_id, sid, created_at, attempts, last_error
            """, LogoutQueue.read)
    }

    public func finishLogout(id: String, claimedUntil: Date, at: Date, delivered: Bool, error: String?) async throws {
        try await run(
            """
            UPDATE logout_deliveries SET finished_at = \(at), delivered = \(delivered), leased_until = NULL,
                last_error = \(error)
            WHERE id = \(id) AND finished_at IS NULL AND leased_until = \(claimedUntil)
            """)
    }

    public func retryLogout(id: String, claimedUntil: Date, nextAttemptAt: Date, error: String) async throws {
        try await run(
            """
            UPDATE logout_deliveries SET next_attempt_at = \(nextAttemptAt), leased_until = NULL, last_error = \(error)
            WHERE id = \(id) AND finished_at IS NULL AND leased_until = \(claimedUntil)
            """)
    }

    public func pendingLogouts() async throws -> [LogoutDelivery] {
        try await rows(
            """
            SELECT id, client_id, user_id, sid, created_at, attempts, last_error FROM logout_deliveries
            WHERE finished_at IS NULL ORDER BY created_at, id
            """, LogoutQueue.read)
    }
}

/// The statements that queue back-channel logouts, run inside the writes that end sessions.
public enum LogoutQueue {
    /// A logout for each app with a `backchannel_logout_uri` that has a grant from the signed-in
    /// session `idHash`, with its `sid` (``BrowserSession/sid``, stored with the session; for a
    /// session stored before it was, the one derived from its hash). Nothing when the session is
    /// gone, was not signed in, or its `sid` is `unlessSID` (it carries on in a new session).
    static func enqueue(session idHash: SessionIDHash, at: Date, unlessSID: String? = nil) -> SQLStatement {
        let sid: SQLStatement =
            "(SELECT COALESCE(s.sid, \(BrowserSession.sid(of: idHash))) FROM sessions s WHERE s.id_hash = \(idHash) AND s.user_id IS NOT NULL)"
        let carriedOn: SQLStatement = unlessSID.map { " AND g.sid <> \($0)" } ?? ""
        return """
            INSERT INTO logout_deliveries (id, client_id, user_id, sid, created_at, next_attempt_at)
            SELECT DISTINCT \(TimeOrderedID.make(at: at)) || ' ' || g.client_id || ' ' || g.user_id, g.client_id, g.user_id,
                g.sid, \(at), \(at)
            FROM grants g JOIN clients c ON c.id = g.client_id
            WHERE g.sid = \(sid)\(carriedOn) AND g.user_id IS NOT NULL AND c.backchannel_logout_uri IS NOT NULL
            """
    }

    /// A logout for each app with a `backchannel_logout_uri` that holds a grant of `user` not
    /// revoked, one per session the grants came from (with its `sid`, which an app that keeps
    /// sessions by `sid` needs), and one without `sid` for grants from no session: run before the
    /// grants are revoked or deleted.
    public static func enqueue(user: SQLStatement, at: Date) -> SQLStatement {
        """
        INSERT INTO logout_deliveries (id, client_id, user_id, sid, created_at, next_attempt_at)
        SELECT DISTINCT \(TimeOrderedID.make(at: at)) || ' ' || g.client_id || ' ' || g.user_id || ' ' || COALESCE(g.sid, ''),
            g.client_id, g.user_id, COALESCE(g.sid, ''), \(at), \(at)
        FROM grants g JOIN clients c ON c.id = g.client_id
        WHERE g.user_id = \(user) AND g.revoked_at IS NULL AND c.backchannel_logout_uri IS NOT NULL
        """
    }

    /// A logout per app and session for the signed-in sessions that `condition` (on the alias
    /// `s`) picks: run before they are deleted.
    static func enqueue(sessionsWhere condition: SQLStatement, at: Date) -> SQLStatement {
        """
        INSERT INTO logout_deliveries (id, client_id, user_id, sid, created_at, next_attempt_at)
        SELECT DISTINCT \(TimeOrderedID.make(at: at)) || ' ' || g.client_id || ' ' || g.user_id || ' ' || g.sid,
            g.client_id, g.user_id, g.sid, \(at), \(at)
        FROM grants g JOIN clients c ON c.id = g.client_id
        WHERE g.sid IN (SELECT s.sid FROM sessions s WHERE \(condition) AND s.user_id IS NOT NULL AND s.sid IS NOT NULL)
            AND g.user_id IS NOT NULL AND c.backchannel_logout_uri IS NOT NULL
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> LogoutDelivery {
        let sid = try row.string(3)
        return LogoutDelivery(
            id: try row.string(0), clientID: try row.key(1), userID: try row.key(2), sid: sid.isEmpty ? nil : sid,
            createdAt: try row.date(4), attempts: try row.int(5), lastError: try row.optionalString(6))
    }
}
