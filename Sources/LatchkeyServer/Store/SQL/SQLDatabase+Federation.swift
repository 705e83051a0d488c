import Foundation
import LatchkeyCore

// Upstream identity providers, links and round trips (FederationStore).
extension SQLDatabase {
    public func identityProviders() async throws -> [IdentityProvider] {
        try await rows(
            "SELECT \(sql: IdentityProviderColumns.list) FROM identity_providers ORDER BY name", IdentityProviderColumns.read)
    }

    public func identityProvider(name: String) async throws -> IdentityProvider? {
        try await row(
            "SELECT \(sql: IdentityProviderColumns.list) FROM identity_providers WHERE name = \(name)",
            IdentityProviderColumns.read)
    }

    public func insertIdentityProvider(_ provider: IdentityProvider) async throws {
        let claims = provider.claims
        try await insert(
            """
            INSERT INTO identity_providers (\(sql: IdentityProviderColumns.list))
            VALUES (\(provider.name), \(provider.displayName), \(provider.kind.rawValue), \(provider.issuer),
                \(provider.clientID), \(provider.sealedClientSecret), \(provider.scope.description),
                \(provider.authorizationEndpoint), \(provider.tokenEndpoint), \(provider.userinfoEndpoint),
                \(claims.subject), \(claims.email), \(claims.emailVerified), \(claims.name), \(claims.username),
                \(provider.createsAccounts), \(provider.allowedEmailDomains.joined(separator: " ")),
                \(provider.linksVerifiedEmail), \(provider.updatesProfile), \(provider.enabled), \(provider.createdAt),
                \(provider.acceptsAssertions))
            """)
    }

    public func setIdentityProviderEnabled(name: String, _ enabled: Bool) async throws -> Bool {
        var steps: [SQLStep] = [.require("UPDATE identity_providers SET enabled = \(enabled) WHERE name = \(name)")]
        if !enabled { steps += Self.endSessions(signedInThrough: name) }
        return try await write(steps) != nil
    }

    public func setIdentityProviderAcceptsAssertions(name: String, _ accepts: Bool) async throws -> Bool {
        try await run("UPDATE identity_providers SET accepts_assertions = \(accepts) WHERE name = \(name)") > 0
    }

    public func deleteIdentityProvider(name: String) async throws -> Bool {
        try await write(
            [
                .require("DELETE FROM identity_providers WHERE name = \(name)"),
                .run("DELETE FROM federated_identities WHERE provider = \(name)"),
                .run("DELETE FROM federation_requests WHERE provider = \(name)"),
            ] + Self.endSessions(signedInThrough: name)) != nil
    }

    /// Ends the sessions whose sign-in went through the provider (their methods start `idp=NAME `,
    /// ``AuthenticationMethods/description``; a name holds no `%` or `_`), their apps told.
    static func endSessions(signedInThrough name: String) -> [SQLStep] {
        let through: SQLStatement = "amr LIKE \(AuthenticationMethods.providerPrefix + name + " %")"
        return [
            .run(LogoutQueue.enqueue(sessionsWhere: "s.\(through)", at: Date())),
            .run("DELETE FROM sessions WHERE \(through)"),
        ]
    }

    public func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentity? {
        try await row(
            """
            SELECT \(sql: FederatedIdentityColumns.list) FROM federated_identities
            WHERE provider = \(provider) AND subject = \(subject)
            """, FederatedIdentityColumns.read)
    }

    public func federatedIdentities(userID: UserID) async throws -> [FederatedIdentity] {
        try await rows(
            """
            SELECT \(sql: FederatedIdentityColumns.list) FROM federated_identities WHERE user_id = \(userID)
            ORDER BY created_at, provider
            """, FederatedIdentityColumns.read)
    }

    public func insertFederatedIdentity(_ identity: FederatedIdentity) async throws -> Bool {
        try await write([.require(FederatedIdentityColumns.insert(identity))]) != nil
    }

    public func insertFederatedUser(_ user: User, identity: FederatedIdentity) async throws -> Bool {
        // The link first: of two first sign-ins at once, the second finds it and creates nothing.
        try await write([.require(FederatedIdentityColumns.insert(identity)), .require(UserColumns.insert(user))]) != nil
    }

    public func touchFederatedIdentity(provider: String, subject: String, at: Date) async throws {
        try await run(
            "UPDATE federated_identities SET last_used_at = \(at) WHERE provider = \(provider) AND subject = \(subject)")
    }

    public func deleteFederatedIdentity(provider: String, userID: UserID) async throws -> Bool {
        try await run("DELETE FROM federated_identities WHERE provider = \(provider) AND user_id = \(userID)") > 0
    }

    public func insertFederationRequest(_ request: FederationRequest) async throws {
        try await insert(
            """
            INSERT INTO federation_requests (\(sql: FederationRequestColumns.list))
            VALUES (\(request.stateHash), \(request.sessionIDHash), \(request.provider), \(request.nonce),
                \(request.sealedCodeVerifier), \(request.pendingID), \(request.next), \(request.linkingUserID),
                \(request.authenticatedAfter), \(request.expiresAt))
            """)
    }

    public func takeFederationRequest(
        stateHash: FederationStateHash, sessionIDHash: SessionIDHash, provider: String, at: Date
    ) async throws -> FederationRequest? {
        try await returning(
            """
            DELETE FROM federation_requests
            WHERE state_hash = \(stateHash) AND session_id_hash = \(sessionIDHash) AND provider = \(provider)
                AND expires_at > \(at)
            RETURNING \(sql: FederationRequestColumns.list)
            """
        ) { row in
            FederationRequest(
                stateHash: try row.key(0), sessionIDHash: try row.key(1), provider: try row.string(2),
                nonce: try row.optionalString(3), sealedCodeVerifier: try row.string(4), pendingID: try row.optionalString(5),
                next: try row.optionalString(6), linkingUserID: try row.optionalKey(7),
                authenticatedAfter: try row.optionalDate(8), expiresAt: try row.date(9))
        }.first
    }
}

/// The columns of a provider, in the order ``read(_:)`` reads them.
enum IdentityProviderColumns {
    static let list = """
        name, display_name, kind, issuer, client_id, client_secret, scope, authorization_endpoint, token_endpoint, \
        userinfo_endpoint, subject_claim, email_claim, email_verified_claim, name_claim, username_claim, creates_accounts, \
        allowed_email_domains, links_verified_email, updates_profile, enabled, created_at, accepts_assertions
        """

    @Sendable static func read(_ row: any SQLRow) throws -> IdentityProvider {
        var claims = ClaimMapping()
        claims.subject = try row.string(10)
        claims.email = try row.string(11)
        claims.emailVerified = try row.string(12)
        claims.name = try row.string(13)
        claims.username = try row.string(14)
        return IdentityProvider(
            name: try row.string(0), displayName: try row.string(1), kind: try row.value(2), issuer: try row.optionalString(3),
            clientID: try row.string(4), sealedClientSecret: try row.optionalString(5), scope: try row.scope(6),
            authorizationEndpoint: try row.optionalString(7), tokenEndpoint: try row.optionalString(8),
            userinfoEndpoint: try row.optionalString(9), claims: claims, createsAccounts: try row.bool(15),
            allowedEmailDomains: try row.string(16).split(separator: " ").map(String.init),
            linksVerifiedEmail: try row.bool(17), updatesProfile: try row.bool(18), enabled: try row.bool(19),
            createdAt: try row.date(20), acceptsAssertions: try row.bool(21))
    }
}

/// The columns of a link, in the order ``read(_:)`` reads them.
enum FederatedIdentityColumns {
    static let list = "provider, subject, user_id, email, created_at, last_used_at"

    /// The `INSERT` of a link, which inserts nothing when the upstream account is linked already.
    static func insert(_ identity: FederatedIdentity) -> SQLStatement {
        """
        INSERT INTO federated_identities (\(sql: list))
        VALUES (\(identity.provider), \(identity.subject), \(identity.userID), \(identity.email), \(identity.createdAt),
            \(identity.lastUsedAt))
        ON CONFLICT (provider, subject) DO NOTHING
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> FederatedIdentity {
        FederatedIdentity(
            provider: try row.string(0), subject: try row.string(1), userID: try row.key(2), email: try row.optionalString(3),
            createdAt: try row.date(4), lastUsedAt: try row.optionalDate(5))
    }
}

enum FederationRequestColumns {
    static let list = """
        state_hash, session_id_hash, provider, nonce, code_verifier, pending_id, next, linking_user_id, \
        authenticated_after, expires_at
        """
}
