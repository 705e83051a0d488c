import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// Scopes, users, clients.
extension PostgresStore {
    public func scopeCatalogue() async throws -> [ScopeDefinition] {
        try await perform { client in
            try await client.query("SELECT name, description FROM scopes ORDER BY name").map {
                ScopeDefinition(name: try $0.string("name"), description: try $0.string("description"))
            }
        }
    }

    public func saveScope(_ scope: ScopeDefinition) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO scopes (name, description) VALUES (\(scope.name), \(scope.description))
                ON CONFLICT (name) DO UPDATE SET description = excluded.description
                """)
        }
    }

    public func deleteScope(named name: String) async throws -> Bool {
        try await perform { client in
            try await client.query("DELETE FROM scopes WHERE name = \(name) RETURNING name").count() > 0
        }
    }

    public func insertUser(_ user: User) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO users (id, username, display_name, password_hash, role, disabled_at, email, email_verified,
                    updated_at, created_at)
                VALUES (\(user.id), \(user.username), \(user.displayName), \(user.passwordHash), \(user.role.rawValue),
                    \(user.disabledAt?.timeIntervalSince1970), \(user.email), \(user.emailVerified),
                    \(user.updatedAt?.timeIntervalSince1970), \(user.createdAt.timeIntervalSince1970))
                """)
        }
    }

    public func user(id: UserID) async throws -> User? {
        return try await perform { client in try await client.query("SELECT * FROM users WHERE id = \(id)").map(Self.user).first }
    }

    public func user(username: Username) async throws -> User? {
        return try await perform { client in
            try await client.query("SELECT * FROM users WHERE username = \(username)").map(Self.user).first
        }
    }

    public func users() async throws -> [User] {
        try await perform { client in try await client.query("SELECT * FROM users ORDER BY username").map(Self.user) }
    }

    public func deleteUser(username: Username) async throws -> Bool {
        return try await transaction { connection, logger in
            let ids = try await connection.query("DELETE FROM users WHERE username = \(username) RETURNING id", logger: logger)
                .map { try $0.string("id") }
            guard let id = ids.first else { return false }
            try await connection.query("DELETE FROM sessions WHERE user_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM consents WHERE user_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM grants WHERE user_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM authorization_codes WHERE user_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM tokens WHERE user_id = \(id)", logger: logger)
            return true
        }
    }

    public func setPasswordHash(username: Username, passwordHash: String) async throws -> Bool {
        return try await transaction { connection, logger in
            let ids = try await connection.query(
                "UPDATE users SET password_hash = \(passwordHash) WHERE username = \(username) RETURNING id", logger: logger
            ).map { try $0.string("id") }
            guard let id = ids.first else { return false }
            try await connection.query("DELETE FROM sessions WHERE user_id = \(id)", logger: logger)
            try await Self.revokeAccess(userID: id, clientID: nil, at: Date(), on: connection, logger: logger)
            return true
        }
    }

    public func setUserRole(id: UserID, role: UserRole) async throws -> Bool {
        return try await perform { pool in
            try await pool.query("UPDATE users SET role = \(role.rawValue) WHERE id = \(id) RETURNING id").count() > 0
        }
    }

    public func setUserDisabled(id: UserID, at disabledAt: Date?) async throws -> Bool {
        let at = disabledAt?.timeIntervalSince1970
        return try await transaction { connection, logger in
            let found =
                try await connection.query("UPDATE users SET disabled_at = \(at) WHERE id = \(id) RETURNING id", logger: logger)
                .count() > 0
            guard found, let at else { return found }
            try await connection.query("DELETE FROM sessions WHERE user_id = \(id)", logger: logger)
            try await Self.revokeAccess(
                userID: id.rawValue, clientID: nil, at: Date(timeIntervalSince1970: at), on: connection, logger: logger)
            return true
        }
    }

    static func user(_ row: PostgresRandomAccessRow) throws -> User {
        User(
            id: try UserID(rawValue: row.string("id")), username: try Username(rawValue: row.string("username")),
            displayName: try row.optionalString("display_name"),
            passwordHash: try row.string("password_hash"), role: UserRole(rawValue: try row.string("role")) ?? .none,
            disabledAt: try row.optionalDate("disabled_at"), email: try row.optionalString("email"),
            emailVerified: try row["email_verified"].decode(Bool.self), updatedAt: try row.optionalDate("updated_at"),
            createdAt: try row.date("created_at"), accessEpoch: try row["access_epoch"].decode(Int.self))
    }

    public func setUserProfile(id: UserID, displayName: String?, email: String?, emailVerified: Bool, at: Date) async throws
        -> Bool
    {
        try await perform { pool in
            try await pool.query(
                """
                UPDATE users SET display_name = \(displayName), email = \(email), email_verified = \(emailVerified),
                    updated_at = \(at.timeIntervalSince1970)
                WHERE id = \(id) RETURNING id
                """
            ).count() > 0
        }
    }

    public func insertClient(_ client: Client) async throws {
        _ = try await perform { pool in
            try await pool.query(
                """
                INSERT INTO clients (id, type, name, redirect_uris, scopes, logo_uri, consent_markdown, privacy_policy_uri,
                    secret_hash, owner_user_id, allow_implicit, created_at, first_party, access_token_lifetime,
                    refresh_token_lifetime, id_token_signed_response_alg, post_logout_redirect_uris, registration,
                    registration_access_token_hash, metadata_expires_at, require_pushed_authorization_requests,
                    allow_device_code)
                VALUES (\(client.id), \(client.type.rawValue), \(client.name), \(client.redirectURIs.joined(separator: "\n")),
                    \(client.scopes.description), \(client.logoURI), \(client.consentMarkdown), \(client.privacyPolicyURI),
                    \(client.secretHash), \(client.ownerUserID), \(client.allowImplicit), \(client.createdAt.timeIntervalSince1970),
                    \(client.firstParty), \(client.accessTokenLifetime), \(client.refreshTokenLifetime),
                    \(client.idTokenSigningAlgorithm.rawValue), \(client.postLogoutRedirectURIs.joined(separator: "\n")),
                    \(client.registration.rawValue), \(client.registrationAccessTokenHash),
                    \(client.metadataExpiresAt?.timeIntervalSince1970), \(client.requirePushedAuthorizationRequests),
                    \(client.allowDeviceCode))
                """)
        }
    }

    public func client(id: ClientID) async throws -> Client? {
        return try await perform { pool in try await pool.query("SELECT * FROM clients WHERE id = \(id)").map(Self.client).first }
    }

    public func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws
        -> (Client?, ThrottleWindow?)
    {
        try await perform { pool in
            var found: (Client?, ThrottleWindow?) = (nil, nil)
            let statement = ClientAndFailures(id: id, knownKey: knownKey, unknownKey: unknownKey, at: at)
            for try await answer in try await pool.execute(statement) { found = answer }
            return found
        }
    }

    public func clients() async throws -> [Client] {
        try await perform { pool in try await pool.query("SELECT * FROM clients ORDER BY created_at").map(Self.client) }
    }

    public func implicitClientExists() async throws -> Bool {
        try await perform { pool in
            try await pool.query("SELECT EXISTS (SELECT 1 FROM clients WHERE allow_implicit AND type = 'browser') AS found")
                .map { try $0["found"].decode(Bool.self) }.first ?? false
        }
    }

    public func clientCount(registration: ClientRegistration) async throws -> Int {
        try await perform { pool in
            try await pool.query("SELECT count(*)::bigint AS clients FROM clients WHERE registration = \(registration.rawValue)")
                .map { try $0["clients"].decode(Int.self) }.first ?? 0
        }
    }

    public func deleteClient(id: ClientID) async throws -> Bool {
        return try await transaction { connection, logger in
            // Codes, grants, tokens, consents: the order every revocation of a user's access takes
            // them in (AccessRevocation), so the two never wait for each other in a circle.
            try await connection.query("DELETE FROM authorization_codes WHERE client_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM grants WHERE client_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM tokens WHERE client_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM consents WHERE client_id = \(id)", logger: logger)
            try await connection.query("DELETE FROM pending_authorizations WHERE client_id = \(id)", logger: logger)
            return try await connection.query("DELETE FROM clients WHERE id = \(id) RETURNING id", logger: logger).count() > 0
        }
    }

    public func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool {
        return try await perform { pool in
            try await pool.query(
                "UPDATE clients SET secret_hash = \(secretHash) WHERE id = \(id) AND secret_hash IS NOT NULL RETURNING id"
            ).count() > 0
        }
    }

    public func updateClient(_ client: Client) async throws -> Bool {
        return try await perform { pool in
            try await pool.query(
                """
                UPDATE clients SET name = \(client.name), redirect_uris = \(client.redirectURIs.joined(separator: "\n")),
                    scopes = \(client.scopes.description), logo_uri = \(client.logoURI),
                    consent_markdown = \(client.consentMarkdown), privacy_policy_uri = \(client.privacyPolicyURI),
                    owner_user_id = \(client.ownerUserID), allow_implicit = \(client.allowImplicit),
                    first_party = \(client.firstParty), access_token_lifetime = \(client.accessTokenLifetime),
                    refresh_token_lifetime = \(client.refreshTokenLifetime),
                    id_token_signed_response_alg = \(client.idTokenSigningAlgorithm.rawValue),
                    post_logout_redirect_uris = \(client.postLogoutRedirectURIs.joined(separator: "\n")),
                    metadata_expires_at = \(client.metadataExpiresAt?.timeIntervalSince1970),
                    require_pushed_authorization_requests = \(client.requirePushedAuthorizationRequests),
                    allow_device_code = \(client.allowDeviceCode)
                WHERE id = \(client.id) RETURNING id
                """
            ).count() > 0
        }
    }

    static func client(_ row: PostgresRandomAccessRow) throws -> Client {
        Client(
            id: try ClientID(rawValue: row.string("id")), type: ClientType(rawValue: try row.string("type")) ?? .native,
            name: try row.string("name"),
            redirectURIs: try row.string("redirect_uris").split(separator: "\n").map(String.init),
            scopes: try row.scope("scopes"),
            logoURI: try row.optionalString("logo_uri"), consentMarkdown: try row.optionalString("consent_markdown"),
            privacyPolicyURI: try row.optionalString("privacy_policy_uri"), secretHash: try row.optionalString("secret_hash"),
            ownerUserID: try row.optionalString("owner_user_id").map(UserID.init(rawValue:)),
            allowImplicit: try row["allow_implicit"].decode(Bool.self), firstParty: try row["first_party"].decode(Bool.self),
            accessTokenLifetime: try row["access_token_lifetime"].decode(Int?.self),
            refreshTokenLifetime: try row["refresh_token_lifetime"].decode(Int?.self),
            idTokenSigningAlgorithm: SigningAlgorithm(rawValue: try row.string("id_token_signed_response_alg")) ?? .rs256,
            postLogoutRedirectURIs: try row.string("post_logout_redirect_uris").split(separator: "\n").map(String.init),
            registration: ClientRegistration(rawValue: try row.string("registration")) ?? .administrator,
            registrationAccessTokenHash: try row.optionalString("registration_access_token_hash"),
            metadataExpiresAt: try row.optionalDate("metadata_expires_at"),
            requirePushedAuthorizationRequests: try row["require_pushed_authorization_requests"].decode(Bool.self),
            allowDeviceCode: try row["allow_device_code"].decode(Bool.self),
            createdAt: try row.date("created_at"))
    }
}
