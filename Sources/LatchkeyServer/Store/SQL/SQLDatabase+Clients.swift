import Foundation
import LatchkeyCore

// Clients.
extension SQLDatabase {
    public func insertClient(_ client: Client) async throws {
        try await insert(
            """
            INSERT INTO clients (id, type, name, redirect_uris, scopes, logo_uri, consent_markdown, privacy_policy_uri,
                secret_hash, owner_user_id, grant_types, created_at, first_party, access_token_lifetime,
                refresh_token_lifetime, id_token_signed_response_alg, post_logout_redirect_uris, registration,
                registration_access_token_hash, metadata_expires_at, require_pushed_authorization_requests, jwks, jwks_uri,
                backchannel_logout_uri)
            VALUES (\(client.id), \(client.type.rawValue), \(client.name), \(client.redirectURIs.joined(separator: "\n")),
                \(client.scopes), \(client.logoURI), \(client.consentMarkdown), \(client.privacyPolicyURI),
                \(client.secretHash), \(client.ownerUserID), \(client.grantTypes.joined(separator: " ")), \(client.createdAt),
                \(client.firstParty), \(client.accessTokenLifetime), \(client.refreshTokenLifetime),
                \(client.idTokenSigningAlgorithm.rawValue), \(client.postLogoutRedirectURIs.joined(separator: "\n")),
                \(client.registration.rawValue), \(client.registrationAccessTokenHash), \(client.metadataExpiresAt),
                \(client.requirePushedAuthorizationRequests), \(client.keys?.jwks), \(client.keys?.jwksURI),
                \(client.backchannelLogoutURI))
            """)
    }

    public func client(id: ClientID) async throws -> Client? {
        try await row("SELECT \(sql: ClientColumns.list) FROM clients WHERE id = \(id)", ClientColumns.read)
    }

    public func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws
        -> (Client?, ThrottleWindow?)
    {
        // An id that cannot name a row names no client: its failures are the unknown client's.
        guard id.isUsable else { return (nil, try await failures(key: unknownKey, at: at)) }
        let found = try await row(
            ClientColumns.andFailures(id: id, knownKey: knownKey, unknownKey: unknownKey, at: at),
            ClientColumns.readWithFailures)
        return found ?? (nil, nil)
    }

    public func clients() async throws -> [Client] {
        try await rows("SELECT \(sql: ClientColumns.list) FROM clients ORDER BY created_at", ClientColumns.read)
    }

    public func implicitClientExists() async throws -> Bool {
        try await row(
            "SELECT EXISTS (SELECT 1 FROM clients WHERE type = 'browser' AND (' ' || grant_types || ' ') LIKE '% implicit %')"
        ) { try $0.bool(0) } ?? false
    }

    public func clientCount(registration: ClientRegistration) async throws -> Int {
        try await row("SELECT count(*) FROM clients WHERE registration = \(registration.rawValue)") { try $0.int(0) } ?? 0
    }

    public func deleteClient(id: ClientID) async throws -> Bool {
        // Codes, grants, tokens, consents: the order every revocation of a user's access takes them
        // in (AccessRevocation), so that on PostgreSQL the two never wait for each other in a circle.
        var steps: [SQLStep] = ["authorization_codes", "grants", "tokens", "consents", "pending_authorizations"].map {
            .run("DELETE FROM \(sql: $0) WHERE client_id = \(id)")
        }
        steps.append(.require("DELETE FROM clients WHERE id = \(id)"))
        return try await write(steps) != nil
    }

    public func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool {
        try await run("UPDATE clients SET secret_hash = \(secretHash) WHERE id = \(id) AND secret_hash IS NOT NULL") > 0
    }

    public func updateClient(_ client: Client) async throws -> Bool {
        try await run(
            """
            UPDATE clients SET name = \(client.name), redirect_uris = \(client.redirectURIs.joined(separator: "\n")),
                scopes = \(client.scopes), logo_uri = \(client.logoURI), consent_markdown = \(client.consentMarkdown),
                privacy_policy_uri = \(client.privacyPolicyURI), owner_user_id = \(client.ownerUserID),
                grant_types = \(client.grantTypes.joined(separator: " ")), first_party = \(client.firstParty),
                access_token_lifetime = \(client.accessTokenLifetime), refresh_token_lifetime = \(client.refreshTokenLifetime),
                id_token_signed_response_alg = \(client.idTokenSigningAlgorithm.rawValue),
                post_logout_redirect_uris = \(client.postLogoutRedirectURIs.joined(separator: "\n")),
                metadata_expires_at = \(client.metadataExpiresAt),
                require_pushed_authorization_requests = \(client.requirePushedAuthorizationRequests),
                jwks = \(client.keys?.jwks), jwks_uri = \(client.keys?.jwksURI),
                backchannel_logout_uri = \(client.backchannelLogoutURI)
            WHERE id = \(client.id)
            """) > 0
    }
}

/// The columns of a client read, in the order ``read(_:)`` reads them.
public enum ClientColumns {
    public static let list = """
        id, type, name, redirect_uris, scopes, logo_uri, consent_markdown, privacy_policy_uri, secret_hash, owner_user_id,
        grant_types, created_at, first_party, access_token_lifetime, refresh_token_lifetime, id_token_signed_response_alg,
        post_logout_redirect_uris, registration, registration_access_token_hash, metadata_expires_at,
        require_pushed_authorization_requests, jwks, jwks_uri, backchannel_logout_uri
        """

    @Sendable public static func read(_ row: any SQLRow) throws -> Client {
        Client(
            id: try row.key(0), type: try row.value(1), name: try row.string(2), redirectURIs: try row.lines(3),
            scopes: try row.scope(4), logoURI: try row.optionalString(5), consentMarkdown: try row.optionalString(6),
            privacyPolicyURI: try row.optionalString(7), secretHash: try row.optionalString(8),
            ownerUserID: try row.optionalKey(9), firstParty: try row.bool(12),
            accessTokenLifetime: try row.optionalInt(13), refreshTokenLifetime: try row.optionalInt(14),
            idTokenSigningAlgorithm: try row.value(15), postLogoutRedirectURIs: try row.lines(16),
            registration: try row.value(17), registrationAccessTokenHash: try row.optionalString(18),
            metadataExpiresAt: try row.optionalDate(19), requirePushedAuthorizationRequests: try row.bool(20),
            grantTypes: try row.string(10).split(separator: " ").map(String.init),
            keys: ClientKeys(jwks: try row.optionalString(21), jwksURI: try row.optionalString(22)),
            backchannelLogoutURI: try row.optionalString(23), createdAt: try row.date(11))
    }

    /// The client `id` (every client column `NULL` when there is none) with the failures counted
    /// under `knownKey`, or under `unknownKey` when there is no such client, in a window that has
    /// not ended at `at`: read by ``readWithFailures(_:)``.
    public static func andFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) -> SQLStatement {
        """
        SELECT \(sql: list), t.failures, t.ends_at
        FROM (SELECT CAST(\(id) AS TEXT) AS wanted) AS w
        LEFT JOIN clients c ON c.id = w.wanted
        LEFT JOIN throttles t ON t.key = (CASE WHEN c.id IS NULL THEN \(unknownKey) ELSE \(knownKey) END)
            AND t.ends_at > \(at)
        """
    }

    /// A client (or none: every client column `NULL`) followed by the failures counted against it
    /// (``ClientStore/clientAndFailures(id:knownKey:unknownKey:at:)``).
    @Sendable public static func readWithFailures(_ row: any SQLRow) throws -> (Client?, ThrottleWindow?) {
        let client = try row.optionalString(0) == nil ? nil : try read(row)
        let failures = try row.optionalInt(24)
        return (client, try failures.map { ThrottleWindow(failures: $0, endsAt: try row.date(25)) })
    }
}
