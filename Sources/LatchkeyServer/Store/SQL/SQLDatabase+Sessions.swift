import Foundation
import LatchkeyCore

// Browser sessions, pending authorization requests, remembered consent.
extension SQLDatabase {
    public func insertSession(_ session: BrowserSession) async throws {
        try await insert(SessionColumns.insert(session))
    }

    public func session(idHash: SessionIDHash) async throws -> BrowserSession? {
        // The user's access epoch in the same read (BrowserSession.accessEpoch).
        try await row(
            """
            SELECT \(sql: SessionColumns.listOfS), u.access_epoch
            FROM sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id_hash = \(idHash)
            """
        ) { row in
            var session = try SessionColumns.read(row)
            session.accessEpoch = try row.optionalInt(9)
            return session
        }
    }

    public func sessions(userID: UserID) async throws -> [BrowserSession] {
        try await rows(
            "SELECT \(sql: SessionColumns.list) FROM sessions WHERE user_id = \(userID) ORDER BY created_at DESC",
            SessionColumns.read)
    }

    public func deleteSessions(userID: UserID) async throws {
        _ = try await write([
            .run(LogoutQueue.enqueue(user: "\(userID)", at: Date())),
            .run(
                """
                DELETE FROM pending_authorizations
                WHERE session_id_hash IN (
                    SELECT id_hash FROM sessions WHERE user_id = \(userID) OR second_factor_user_id = \(userID))
                """),
            .run("DELETE FROM sessions WHERE user_id = \(userID) OR second_factor_user_id = \(userID)"),
        ])
    }

    public func replaceSession(oldIDHash: SessionIDHash?, with session: BrowserSession) async throws {
        // An old session that no row can have had is no session to replace.
        let oldIDHash = oldIDHash.flatMap { $0.isUsable ? $0 : nil }
        var steps: [SQLStep] = [.require(SessionColumns.insert(session))]
        if let oldIDHash {
            // The old session ends, and its apps are told, unless the new one carries on its `sid`
            // (the same person signing in again, a second factor, a step-up).
            steps.append(.run(LogoutQueue.enqueue(session: oldIDHash, at: session.lastSeenAt, unlessSID: session.sid)))
            steps.append(
                .run("UPDATE pending_authorizations SET session_id_hash = \(session.idHash) WHERE session_id_hash = \(oldIDHash)")
            )
            steps.append(.run("DELETE FROM sessions WHERE id_hash = \(oldIDHash)"))
        }
        guard try await write(steps) != nil else { throw StoreError.conflict("The session was not stored.") }
    }

    public func touchSession(idHash: SessionIDHash, at: Date, expiresAt: Date) async throws {
        try await run("UPDATE sessions SET last_seen_at = \(at), expires_at = \(expiresAt) WHERE id_hash = \(idHash)")
    }

    public func deleteSession(idHash: SessionIDHash) async throws {
        _ = try await write([
            .run("DELETE FROM pending_authorizations WHERE session_id_hash = \(idHash)"),
            .run("DELETE FROM sessions WHERE id_hash = \(idHash)"),
        ])
    }

    public func insertPendingAuthorization(_ pending: PendingAuthorization) async throws {
        try await insert(
            """
            INSERT INTO pending_authorizations (\(sql: PendingColumns.list))
            VALUES (\(pending.id), \(pending.sessionIDHash), \(pending.clientID), \(pending.redirectURI),
                \(pending.redirectURIParameter), \(pending.scope), \(pending.state), \(pending.codeChallenge),
                \(pending.responseType.rawValue), \(pending.nonce), \(pending.authenticatedAfter), \(pending.promptConsent),
                \(pending.hintedSubject), \(pending.createdAt), \(pending.expiresAt), \(pending.resources),
                \(pending.deviceCodeHash), \(pending.dpopJKT), \(pending.requiredLevel?.rawValue),
                \(pending.responseMode?.rawValue))
            """)
    }

    public func pendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        try await row("SELECT \(sql: PendingColumns.list) FROM pending_authorizations WHERE id = \(id)", PendingColumns.read)
    }

    public func takePendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        try await returning(
            "DELETE FROM pending_authorizations WHERE id = \(id) RETURNING \(sql: PendingColumns.list)", PendingColumns.read
        ).first
    }

    public func consent(userID: UserID, clientID: ClientID) async throws -> ConsentRecord? {
        try await row(
            """
            SELECT user_id, client_id, scope, resources, updated_at FROM consents
            WHERE user_id = \(userID) AND client_id = \(clientID)
            """
        ) { row in
            ConsentRecord(
                userID: try row.key(0), clientID: try row.key(1), scope: try row.scope(2),
                scopesByResource: ConsentRecord.scopesByResource(storeValue: try row.string(3)), updatedAt: try row.date(4))
        }
    }

    public func saveConsent(_ consent: ConsentRecord) async throws {
        try await run(
            """
            INSERT INTO consents (user_id, client_id, scope, updated_at, resources)
            VALUES (\(consent.userID), \(consent.clientID), \(consent.scope), \(consent.updatedAt),
                \(ConsentRecord.storeValue(consent.scopesByResource)))
            ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, updated_at = excluded.updated_at,
                resources = excluded.resources
            """)
    }

    // MARK: Throttling

    public func recordFailure(key: ThrottleKey, at: Date, window: TimeInterval) async throws -> ThrottleWindow {
        // One statement: a window that has ended starts again at one failure.
        let windows = try await returning(
            """
            INSERT INTO throttles (key, failures, ends_at) VALUES (\(key), 1, \(at.addingTimeInterval(window)))
            ON CONFLICT (key) DO UPDATE SET
                failures = CASE WHEN throttles.ends_at <= \(at) THEN 1 ELSE throttles.failures + 1 END,
                ends_at = CASE WHEN throttles.ends_at <= \(at) THEN excluded.ends_at ELSE throttles.ends_at END
            RETURNING failures, ends_at
            """
        ) { ThrottleWindow(failures: try $0.int(0), endsAt: try $0.date(1)) }
        guard let window = windows.first else { throw StoreError.unavailable("The throttle update returned nothing.") }
        return window
    }

    public func failures(key: ThrottleKey, at: Date) async throws -> ThrottleWindow? {
        try await row("SELECT failures, ends_at FROM throttles WHERE key = \(key) AND ends_at > \(at)") {
            ThrottleWindow(failures: try $0.int(0), endsAt: try $0.date(1))
        }
    }

    public func clearFailures(key: ThrottleKey) async throws {
        try await run("DELETE FROM throttles WHERE key = \(key)")
    }

    public func forgiveFailure(key: ThrottleKey, at: Date) async throws {
        try await run("UPDATE throttles SET failures = failures - 1 WHERE key = \(key) AND ends_at > \(at) AND failures > 0")
    }
}

/// The columns of a session, in the order ``read(_:)`` reads them.
enum SessionColumns {
    static let names = [
        "id_hash", "user_id", "csrf_token", "created_at", "expires_at", "last_seen_at", "amr", "second_factor_user_id",
        "sid",
    ]
    static let list = names.joined(separator: ", ")
    /// ``list`` with each column named through the alias `s`.
    static let listOfS = names.map { "s." + $0 }.joined(separator: ", ")

    static func insert(_ session: BrowserSession) -> SQLStatement {
        """
        INSERT INTO sessions (\(sql: list)) VALUES (\(session.idHash), \(session.userID), \(session.csrfToken),
            \(session.createdAt), \(session.expiresAt), \(session.lastSeenAt), \(session.amr?.description),
            \(session.secondFactorUserID), \(session.sid))
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> BrowserSession {
        BrowserSession(
            idHash: try row.key(0), userID: try row.optionalKey(1), csrfToken: try row.string(2), createdAt: try row.date(3),
            expiresAt: try row.date(4), lastSeenAt: try row.optionalDate(5),
            amr: try row.optionalString(6).map(AuthenticationMethods.init(storeValue:)),
            secondFactorUserID: try row.optionalKey(7), sid: try row.optionalString(8))
    }
}

/// The columns of a pending authorization request, in the order ``read(_:)`` reads them.
enum PendingColumns {
    static let list = """
        id, session_id_hash, client_id, redirect_uri, redirect_uri_parameter, scope, state, code_challenge, response_type,
        nonce, authenticated_after, prompt_consent, hinted_subject, created_at, expires_at, resources, device_code_hash,
        dpop_jkt, required_acr, response_mode
        """

    @Sendable static func read(_ row: any SQLRow) throws -> PendingAuthorization {
        PendingAuthorization(
            id: try row.key(0), sessionIDHash: try row.key(1), clientID: try row.key(2), redirectURI: try row.string(3),
            redirectURIParameter: try row.optionalString(4), scope: try row.scope(5), state: try row.optionalString(6),
            codeChallenge: try row.optionalString(7), responseType: try row.value(8), nonce: try row.optionalString(9),
            authenticatedAfter: try row.optionalDate(10), promptConsent: try row.bool(11), hintedSubject: try row.optionalKey(12),
            resources: try row.resources(15), deviceCodeHash: try row.optionalString(16), dpopJKT: try row.optionalString(17),
            requiredLevel: try row.optionalString(18).flatMap(AuthenticationLevel.init(rawValue:)),
            responseMode: try row.optionalString(19).flatMap(ResponseMode.init(rawValue:)),
            createdAt: try row.date(13),
            expiresAt: try row.date(14))
    }
}
