import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

// Browser sessions, pending authorization requests, remembered consent.
extension SQLiteStore {
    public func insertSession(_ session: BrowserSession) async throws {
        try await write { db in try Self.insert(session, db) }
    }

    public func session(idHash: SessionIDHash) async throws -> BrowserSession? {
        return try await read { db in
            // The user's access epoch in the same read (BrowserSession.accessEpoch).
            try db.row(
                sql: """
                    SELECT s.*, u.access_epoch FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?
                    """, arguments: [idHash]
            ).map { row in
                var session = Self.session(row)
                session.accessEpoch = row["access_epoch"]
                return session
            }
        }
    }

    public func sessions(userID: UserID) async throws -> [BrowserSession] {
        return try await read { db in
            try db.rows(sql: "SELECT * FROM sessions WHERE user_id = ? ORDER BY created_at DESC", arguments: [userID])
                .map(Self.session)
        }
    }

    public func deleteSessions(userID: UserID) async throws {
        try await write { db in
            try db.run(
                sql: """
                    DELETE FROM pending_authorizations
                    WHERE session_id_hash IN (SELECT id_hash FROM sessions WHERE user_id = ?)
                    """, arguments: [userID])
            try db.run(sql: "DELETE FROM sessions WHERE user_id = ?", arguments: [userID])
        }
    }

    private static func session(_ row: Row) -> BrowserSession {
        BrowserSession(
            idHash: row["id_hash"], userID: row["user_id"], csrfToken: row["csrf_token"], createdAt: row.date("created_at"),
            expiresAt: row.date("expires_at"), lastSeenAt: row.optionalDate("last_seen_at"))
    }

    public func replaceSession(oldIDHash: SessionIDHash?, with session: BrowserSession) async throws {
        try await write { db in
            try Self.insert(session, db)
            if let oldIDHash {
                try db.run(
                    sql: "UPDATE pending_authorizations SET session_id_hash = ? WHERE session_id_hash = ?",
                    arguments: [session.idHash, oldIDHash])
                try db.run(sql: "DELETE FROM sessions WHERE id_hash = ?", arguments: [oldIDHash])
            }
        }
    }

    public func touchSession(idHash: SessionIDHash, at: Date, expiresAt: Date) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE id_hash = ?",
                arguments: [at.storeValue, expiresAt.storeValue, idHash])
        }
    }

    public func deleteSession(idHash: SessionIDHash) async throws {
        try await write { db in
            try db.run(sql: "DELETE FROM pending_authorizations WHERE session_id_hash = ?", arguments: [idHash])
            try db.run(sql: "DELETE FROM sessions WHERE id_hash = ?", arguments: [idHash])
        }
    }

    private static func insert(_ session: BrowserSession, _ db: Database) throws {
        try db.run(
            sql: """
                INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at, last_seen_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                session.idHash, session.userID, session.csrfToken, session.createdAt.storeValue,
                session.expiresAt.storeValue, session.lastSeenAt.storeValue,
            ])
    }

    // MARK: Throttling

    public func recordFailure(key: ThrottleKey, at: Date, window: TimeInterval) async throws -> ThrottleWindow {
        return try await write { db in
            // One statement: a window that has ended starts again at one failure.
            let row = try db.row(
                sql: """
                    INSERT INTO throttles (key, failures, ends_at) VALUES (?, 1, ?)
                    ON CONFLICT (key) DO UPDATE SET
                        failures = CASE WHEN ends_at <= ? THEN 1 ELSE failures + 1 END,
                        ends_at = CASE WHEN ends_at <= ? THEN excluded.ends_at ELSE ends_at END
                    RETURNING failures, ends_at
                    """,
                arguments: [key, at.addingTimeInterval(window).storeValue, at.storeValue, at.storeValue])
            guard let row else { throw StoreError.unavailable("the throttle update returned nothing") }
            return ThrottleWindow(failures: row["failures"], endsAt: row.date("ends_at"))
        }
    }

    public func failures(key: ThrottleKey, at: Date) async throws -> ThrottleWindow? {
        return try await read { db in
            try db.row(
                sql: "SELECT failures, ends_at FROM throttles WHERE key = ? AND ends_at > ?", arguments: [key, at.storeValue]
            )
            .map { ThrottleWindow(failures: $0["failures"], endsAt: $0.date("ends_at")) }
        }
    }

    public func clearFailures(key: ThrottleKey) async throws {
        try await write { db in try db.run(sql: "DELETE FROM throttles WHERE key = ?", arguments: [key]) }
    }

    public func forgiveFailure(key: ThrottleKey, at: Date) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE throttles SET failures = failures - 1 WHERE key = ? AND ends_at > ? AND failures > 0",
                arguments: [key, at.storeValue])
        }
    }

    public func insertPendingAuthorization(_ pending: PendingAuthorization) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO pending_authorizations (id, session_id_hash, client_id, redirect_uri, redirect_uri_parameter,
                        scope, state, code_challenge, response_type, nonce, authenticated_after, prompt_consent, hinted_subject,
                        created_at, expires_at, resources, device_code_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    pending.id, pending.sessionIDHash, pending.clientID, pending.redirectURI, pending.redirectURIParameter,
                    pending.scope.description, pending.state, pending.codeChallenge, pending.responseType.rawValue,
                    pending.nonce, pending.authenticatedAfter?.storeValue, pending.promptConsent, pending.hintedSubject,
                    pending.createdAt.storeValue, pending.expiresAt.storeValue, pending.resources.description,
                    pending.deviceCodeHash,
                ])
        }
    }

    public func pendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        return try await read { db in
            try db.row(sql: "SELECT * FROM pending_authorizations WHERE id = ?", arguments: [id]).map(Self.pending)
        }
    }

    public func takePendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        return try await write { db in
            guard
                let pending = try db.row(sql: "SELECT * FROM pending_authorizations WHERE id = ?", arguments: [id])
                    .map(Self.pending)
            else { return nil }
            try db.run(sql: "DELETE FROM pending_authorizations WHERE id = ?", arguments: [id])
            return pending
        }
    }

    static func pending(_ row: Row) -> PendingAuthorization {
        PendingAuthorization(
            id: row["id"], sessionIDHash: row["session_id_hash"], clientID: row["client_id"], redirectURI: row["redirect_uri"],
            redirectURIParameter: row["redirect_uri_parameter"], scope: row.scope("scope"), state: row["state"],
            codeChallenge: row["code_challenge"], responseType: ResponseType(rawValue: row["response_type"]) ?? .code,
            nonce: row["nonce"], authenticatedAfter: row.optionalDate("authenticated_after"),
            promptConsent: row["prompt_consent"], hintedSubject: row["hinted_subject"],
            resources: ResourceSet(storeValue: row["resources"]), deviceCodeHash: row["device_code_hash"],
            createdAt: row.date("created_at"), expiresAt: row.date("expires_at"))
    }

    public func consent(userID: UserID, clientID: ClientID) async throws -> ConsentRecord? {
        return try await read { db in
            try db.row(
                sql: "SELECT * FROM consents WHERE user_id = ? AND client_id = ?", arguments: [userID, clientID]
            ).map {
                ConsentRecord(
                    userID: $0["user_id"], clientID: $0["client_id"], scope: $0.scope("scope"),
                    scopesByResource: ConsentRecord.scopesByResource(storeValue: $0["resources"]),
                    updatedAt: $0.date("updated_at"))
            }
        }
    }

    public func saveConsent(_ consent: ConsentRecord) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO consents (user_id, client_id, scope, updated_at, resources) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(user_id, client_id) DO UPDATE SET scope = excluded.scope, updated_at = excluded.updated_at,
                        resources = excluded.resources
                    """,
                arguments: [
                    consent.userID, consent.clientID, consent.scope.description, consent.updatedAt.storeValue,
                    ConsentRecord.storeValue(consent.scopesByResource),
                ])
        }
    }
}
