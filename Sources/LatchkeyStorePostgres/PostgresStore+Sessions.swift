import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// Browser sessions, pending authorization requests, remembered consent.
extension PostgresStore {
    public func insertSession(_ session: BrowserSession) async throws {
        _ = try await perform { client in try await client.query(Self.insertQuery(session)) }
    }

    static func insertQuery(_ session: BrowserSession) -> PostgresQuery {
        """
        INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at, last_seen_at)
        VALUES (\(session.idHash), \(session.userID), \(session.csrfToken), \(session.createdAt.timeIntervalSince1970),
            \(session.expiresAt.timeIntervalSince1970), \(session.lastSeenAt.timeIntervalSince1970))
        """
    }

    public func session(idHash: SessionIDHash) async throws -> BrowserSession? {
        return try await perform { client in
            // The user's access epoch in the same read (BrowserSession.accessEpoch).
            try await client.query(
                """
                SELECT s.*, u.access_epoch FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id_hash = \(idHash)
                """
            ).map { row in
                var session = try Self.session(row)
                session.accessEpoch = try row["access_epoch"].decode(Int?.self)
                return session
            }.first
        }
    }

    public func sessions(userID: UserID) async throws -> [BrowserSession] {
        return try await perform { client in
            try await client.query("SELECT * FROM sessions WHERE user_id = \(userID) ORDER BY created_at DESC").map(Self.session)
        }
    }

    public func deleteSessions(userID: UserID) async throws {
        _ = try await transaction { connection, logger in
            try await connection.query(
                """
                DELETE FROM pending_authorizations
                WHERE session_id_hash IN (SELECT id_hash FROM sessions WHERE user_id = \(userID))
                """, logger: logger)
            try await connection.query("DELETE FROM sessions WHERE user_id = \(userID)", logger: logger)
            return true
        }
    }

    private static func session(_ row: PostgresRandomAccessRow) throws -> BrowserSession {
        BrowserSession(
            idHash: try SessionIDHash(rawValue: row.string("id_hash")),
            userID: try row.optionalString("user_id").map(UserID.init(rawValue:)),
            csrfToken: try row.string("csrf_token"),
            createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            lastSeenAt: try row.optionalDate("last_seen_at"))
    }

    public func touchSession(idHash: SessionIDHash, at: Date, expiresAt: Date) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                UPDATE sessions SET last_seen_at = \(at.timeIntervalSince1970), expires_at = \(expiresAt.timeIntervalSince1970)
                WHERE id_hash = \(idHash)
                """)
        }
    }

    public func deleteSession(idHash: SessionIDHash) async throws {
        _ = try await transaction { connection, logger in
            try await connection.query("DELETE FROM pending_authorizations WHERE session_id_hash = \(idHash)", logger: logger)
            try await connection.query("DELETE FROM sessions WHERE id_hash = \(idHash)", logger: logger)
            return true
        }
    }

    // MARK: Throttling

    public func recordFailure(key: ThrottleKey, at: Date, window: TimeInterval) async throws -> ThrottleWindow {
        let now = at.timeIntervalSince1970
        let end = at.addingTimeInterval(window).timeIntervalSince1970
        let windows = try await perform { client in
            // One statement: a window that has ended starts again at one failure.
            try await client.query(
                """
                INSERT INTO throttles (key, failures, ends_at) VALUES (\(key), 1, \(end))
                ON CONFLICT (key) DO UPDATE SET
                    failures = CASE WHEN throttles.ends_at <= \(now) THEN 1 ELSE throttles.failures + 1 END,
                    ends_at = CASE WHEN throttles.ends_at <= \(now) THEN excluded.ends_at ELSE throttles.ends_at END
                RETURNING failures, ends_at
                """
            ).map { ThrottleWindow(failures: try $0["failures"].decode(Int.self), endsAt: try $0.date("ends_at")) }
        }
        guard let window = windows.first else { throw StoreError.unavailable("the throttle update returned nothing") }
        return window
    }

    public func failures(key: ThrottleKey, at: Date) async throws -> ThrottleWindow? {
        let now = at.timeIntervalSince1970
        return try await perform { client in
            try await client.query("SELECT failures, ends_at FROM throttles WHERE key = \(key) AND ends_at > \(now)").map {
                ThrottleWindow(failures: try $0["failures"].decode(Int.self), endsAt: try $0.date("ends_at"))
            }.first
        }
    }

    public func clearFailures(key: ThrottleKey) async throws {
        _ = try await perform { client in try await client.query("DELETE FROM throttles WHERE key = \(key)") }
    }

    public func forgiveFailure(key: ThrottleKey, at: Date) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                UPDATE throttles SET failures = failures - 1
                WHERE key = \(key) AND ends_at > \(at.timeIntervalSince1970) AND failures > 0
                """)
        }
    }

    public func replaceSession(oldIDHash: SessionIDHash?, with session: BrowserSession) async throws {
        _ = try await transaction { connection, logger in
            try await connection.query(Self.insertQuery(session), logger: logger)
            if let oldIDHash {
                try await connection.query(
                    "UPDATE pending_authorizations SET session_id_hash = \(session.idHash) WHERE session_id_hash = \(oldIDHash)",
                    logger: logger)
                try await connection.query("DELETE FROM sessions WHERE id_hash = \(oldIDHash)", logger: logger)
            }
            return true
        }
    }

    public func insertPendingAuthorization(_ pending: PendingAuthorization) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO pending_authorizations (id, session_id_hash, client_id, redirect_uri, redirect_uri_parameter, scope,
                    state, code_challenge, response_type, nonce, authenticated_after, prompt_consent, hinted_subject, created_at,
                    expires_at, resources, device_code_hash)
                VALUES (\(pending.id), \(pending.sessionIDHash), \(pending.clientID), \(pending.redirectURI),
                    \(pending.redirectURIParameter), \(pending.scope.description), \(pending.state), \(pending.codeChallenge),
                    \(pending.responseType.rawValue), \(pending.nonce), \(pending.authenticatedAfter?.timeIntervalSince1970),
                    \(pending.promptConsent), \(pending.hintedSubject), \(pending.createdAt.timeIntervalSince1970), \(pending.expiresAt.timeIntervalSince1970),
                    \(pending.resources.description), \(pending.deviceCodeHash))
                """)
        }
    }

    public func pendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        return try await perform { client in
            try await client.query("SELECT * FROM pending_authorizations WHERE id = \(id)").map(Self.pending).first
        }
    }

    public func takePendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        return try await perform { client in
            try await client.query("DELETE FROM pending_authorizations WHERE id = \(id) RETURNING *").map(Self.pending).first
        }
    }

    static func pending(_ row: PostgresRandomAccessRow) throws -> PendingAuthorization {
        PendingAuthorization(
            id: try PendingRequestID(rawValue: row.string("id")),
            sessionIDHash: try SessionIDHash(rawValue: row.string("session_id_hash")),
            clientID: try ClientID(rawValue: row.string("client_id")),
            redirectURI: try row.string("redirect_uri"), redirectURIParameter: try row.optionalString("redirect_uri_parameter"),
            scope: try row.scope("scope"), state: try row.optionalString("state"),
            codeChallenge: try row.optionalString("code_challenge"),
            responseType: ResponseType(rawValue: try row.string("response_type")) ?? .code,
            nonce: try row.optionalString("nonce"), authenticatedAfter: try row.optionalDate("authenticated_after"),
            promptConsent: try row["prompt_consent"].decode(Bool.self),
            hintedSubject: try row.optionalString("hinted_subject").map(UserID.init(rawValue:)),
            resources: ResourceSet(storeValue: try row.string("resources")),
            deviceCodeHash: try row.optionalString("device_code_hash"),
            createdAt: try row.date("created_at"),
            expiresAt: try row.date("expires_at"))
    }

    public func consent(userID: UserID, clientID: ClientID) async throws -> ConsentRecord? {
        return try await perform { client in
            try await client.query("SELECT * FROM consents WHERE user_id = \(userID) AND client_id = \(clientID)").map {
                ConsentRecord(
                    userID: try UserID(rawValue: $0.string("user_id")), clientID: try ClientID(rawValue: $0.string("client_id")),
                    scope: try $0.scope("scope"),
                    scopesByResource: ConsentRecord.scopesByResource(storeValue: try $0.string("resources")),
                    updatedAt: try $0.date("updated_at"))
            }.first
        }
    }

    public func saveConsent(_ consent: ConsentRecord) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO consents (user_id, client_id, scope, updated_at, resources)
                VALUES (\(consent.userID), \(consent.clientID), \(consent.scope.description), \(consent.updatedAt.timeIntervalSince1970),
                    \(ConsentRecord.storeValue(consent.scopesByResource)))
                ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, updated_at = excluded.updated_at,
                    resources = excluded.resources
                """)
        }
    }
}
