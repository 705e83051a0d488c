import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

// Scopes, users, clients.
extension SQLiteStore {
    public func scopeCatalogue() async throws -> [ScopeDefinition] {
        try await read { db in
            try db.rows(sql: "SELECT name, description FROM scopes ORDER BY name").map {
                ScopeDefinition(name: $0["name"], description: $0["description"])
            }
        }
    }

    public func saveScope(_ scope: ScopeDefinition) async throws {
        try await write { db in
            try db.run(
                sql:
                    "INSERT INTO scopes (name, description) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET description = excluded.description",
                arguments: [scope.name, scope.description])
        }
    }

    public func deleteScope(named name: String) async throws -> Bool {
        try await write { db in
            try db.run(sql: "DELETE FROM scopes WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    public func insertUser(_ user: User) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO users (id, username, display_name, password_hash, role, disabled_at, email, email_verified,
                        updated_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    user.id, user.username, user.displayName, user.passwordHash, user.role.rawValue,
                    user.disabledAt?.storeValue, user.email, user.emailVerified, user.updatedAt?.storeValue,
                    user.createdAt.storeValue,
                ])
        }
    }

    public func user(id: UserID) async throws -> User? {
        return try await read { db in
            try db.row(sql: "SELECT \(Self.userColumns) FROM users WHERE id = ?", arguments: [id]).map(Self.user)
        }
    }

    public func user(username: Username) async throws -> User? {
        return try await read { db in
            try db.row(sql: "SELECT \(Self.userColumns) FROM users WHERE username = ?", arguments: [username]).map(Self.user)
        }
    }

    public func users() async throws -> [User] {
        try await read { db in try db.rows(sql: "SELECT \(Self.userColumns) FROM users ORDER BY username").map(Self.user) }
    }

    public func deleteUser(username: Username) async throws -> Bool {
        return try await write { db in
            guard let id: String = try db.row(sql: "SELECT id FROM users WHERE username = ?", arguments: [username])?["id"]
            else { return false }
            for table in ["sessions", "consents", "grants", "authorization_codes", "tokens"] {
                try db.run(sql: "DELETE FROM \(table) WHERE user_id = ?", arguments: [id])
            }
            try db.run(sql: "DELETE FROM users WHERE id = ?", arguments: [id])
            return true
        }
    }

    public func setPasswordHash(username: Username, passwordHash: String) async throws -> Bool {
        return try await write { db in
            try db.run(sql: "UPDATE users SET password_hash = ? WHERE username = ?", arguments: [passwordHash, username])
            guard db.changesCount > 0,
                let id: String = try db.row(sql: "SELECT id FROM users WHERE username = ?", arguments: [username])?["id"]
            else { return false }
            try db.run(sql: "DELETE FROM sessions WHERE user_id = ?", arguments: [id])
            try Self.revokeAccess(userID: id, clientID: nil, at: Date(), db)
            return true
        }
    }

    public func setUserRole(id: UserID, role: UserRole) async throws -> Bool {
        try await write { db in
            try db.run(sql: "UPDATE users SET role = ? WHERE id = ?", arguments: [role.rawValue, id])
            return db.changesCount > 0
        }
    }

    public func setUserDisabled(id: UserID, at disabledAt: Date?) async throws -> Bool {
        try await write { db in
            try db.run(sql: "UPDATE users SET disabled_at = ? WHERE id = ?", arguments: [disabledAt?.storeValue, id])
            guard db.changesCount > 0 else { return false }
            guard let at = disabledAt?.storeValue else { return true }
            try db.run(sql: "DELETE FROM sessions WHERE user_id = ?", arguments: [id])
            try Self.revokeAccess(userID: id.rawValue, clientID: nil, at: Date(storeValue: at), db)
            return true
        }
    }

    // Rows are read by position over these column lists: reading by name made GRDB lowercase
    // every column name on every lookup, which showed in profiles of the hot paths.
    static let userColumns =
        "id, username, display_name, password_hash, created_at, role, disabled_at, email, email_verified, updated_at, access_epoch"

    static func user(_ row: Row) -> User {
        User(
            id: row[0], username: row[1], displayName: row[2], passwordHash: row[3], role: UserRole(rawValue: row[5]) ?? .none,
            disabledAt: (row[6] as Double?).map(Date.init(storeValue:)), email: row[7], emailVerified: row[8],
            updatedAt: (row[9] as Double?).map(Date.init(storeValue:)), createdAt: Date(storeValue: row[4]),
            accessEpoch: row[10])
    }

    public func setUserProfile(id: UserID, displayName: String?, email: String?, emailVerified: Bool, at: Date) async throws
        -> Bool
    {
        try await write { db in
            try db.run(
                sql: "UPDATE users SET display_name = ?, email = ?, email_verified = ?, updated_at = ? WHERE id = ?",
                arguments: [displayName, email, emailVerified, at.storeValue, id])
            return db.changesCount > 0
        }
    }

    public func insertClient(_ client: Client) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO clients (id, type, name, redirect_uris, scopes, logo_uri, consent_markdown,
                        privacy_policy_uri, secret_hash, owner_user_id, allow_implicit, created_at, first_party,
                        access_token_lifetime, refresh_token_lifetime, id_token_signed_response_alg, post_logout_redirect_uris,
                        registration, registration_access_token_hash, metadata_expires_at,
                        require_pushed_authorization_requests, allow_device_code)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    client.id, client.type.rawValue, client.name, client.redirectURIs.joined(separator: "\n"),
                    client.scopes.description, client.logoURI, client.consentMarkdown, client.privacyPolicyURI,
                    client.secretHash, client.ownerUserID, client.allowImplicit, client.createdAt.storeValue, client.firstParty,
                    client.accessTokenLifetime, client.refreshTokenLifetime, client.idTokenSigningAlgorithm.rawValue,
                    client.postLogoutRedirectURIs.joined(separator: "\n"), client.registration.rawValue,
                    client.registrationAccessTokenHash, client.metadataExpiresAt?.storeValue,
                    client.requirePushedAuthorizationRequests, client.allowDeviceCode,
                ])
        }
    }

    public func client(id: ClientID) async throws -> Client? {
        return try await read { db in
            try db.row(sql: "SELECT \(Self.clientColumns) FROM clients WHERE id = ?", arguments: [id]).map(Self.client)
        }
    }

    public func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws
        -> (Client?, ThrottleWindow?)
    {
        return try await read { db in
            let row = try db.row(
                sql: """
                    SELECT \(Self.clientColumns), t.failures, t.ends_at
                    FROM (SELECT ? AS wanted) AS w
                    LEFT JOIN clients c ON c.id = w.wanted
                    LEFT JOIN throttles t ON t.key = (CASE WHEN c.id IS NULL THEN ? ELSE ? END) AND t.ends_at > ?
                    """, arguments: [id, unknownKey, knownKey, at.storeValue])
            guard let row else { return (nil, nil) }
            let client = (row[0] as String?) == nil ? nil : Self.client(row)
            let failures: Int? = row[22]
            return (client, failures.map { ThrottleWindow(failures: $0, endsAt: Date(storeValue: row[23])) })
        }
    }

    public func clients() async throws -> [Client] {
        try await read { db in try db.rows(sql: "SELECT \(Self.clientColumns) FROM clients ORDER BY created_at").map(Self.client)
        }
    }

    public func implicitClientExists() async throws -> Bool {
        try await read { db in
            try db.row(sql: "SELECT EXISTS (SELECT 1 FROM clients WHERE allow_implicit AND type = 'browser')")?[0] ?? false
        }
    }

    public func clientCount(registration: ClientRegistration) async throws -> Int {
        try await read { db in
            try db.row(sql: "SELECT count(*) FROM clients WHERE registration = ?", arguments: [registration.rawValue])?[0] ?? 0
        }
    }

    public func deleteClient(id: ClientID) async throws -> Bool {
        return try await write { db in
            for table in ["consents", "grants", "authorization_codes", "tokens", "pending_authorizations"] {
                try db.run(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            try db.run(sql: "DELETE FROM clients WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    public func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool {
        return try await write { db in
            try db.run(
                sql: "UPDATE clients SET secret_hash = ? WHERE id = ? AND secret_hash IS NOT NULL", arguments: [secretHash, id])
            return db.changesCount > 0
        }
    }

    public func updateClient(_ client: Client) async throws -> Bool {
        try await write { db in
            try db.run(
                sql: """
                    UPDATE clients SET name = ?, redirect_uris = ?, scopes = ?, logo_uri = ?, consent_markdown = ?,
                        privacy_policy_uri = ?, owner_user_id = ?, allow_implicit = ?, first_party = ?,
                        access_token_lifetime = ?, refresh_token_lifetime = ?, id_token_signed_response_alg = ?,
                        post_logout_redirect_uris = ?, metadata_expires_at = ?, require_pushed_authorization_requests = ?,
                        allow_device_code = ?
                    WHERE id = ?
                    """,
                arguments: [
                    client.name, client.redirectURIs.joined(separator: "\n"), client.scopes.description, client.logoURI,
                    client.consentMarkdown, client.privacyPolicyURI, client.ownerUserID, client.allowImplicit,
                    client.firstParty, client.accessTokenLifetime, client.refreshTokenLifetime,
                    client.idTokenSigningAlgorithm.rawValue, client.postLogoutRedirectURIs.joined(separator: "\n"),
                    client.metadataExpiresAt?.storeValue, client.requirePushedAuthorizationRequests, client.allowDeviceCode,
                    client.id,
                ])
            return db.changesCount > 0
        }
    }

    static let clientColumns = """
        id, type, name, redirect_uris, scopes, logo_uri, consent_markdown, privacy_policy_uri, secret_hash, owner_user_id,
        allow_implicit, created_at, first_party, access_token_lifetime, refresh_token_lifetime, id_token_signed_response_alg,
        post_logout_redirect_uris, registration, registration_access_token_hash, metadata_expires_at,
        require_pushed_authorization_requests, allow_device_code
        """

    static func client(_ row: Row) -> Client {
        let uris: String = row[3]
        let logoutURIs: String = row[16]
        return Client(
            id: row[0], type: ClientType(rawValue: row[1]) ?? .native, name: row[2],
            redirectURIs: uris.split(separator: "\n").map(String.init), scopes: ScopeSet(words: row[4]), logoURI: row[5],
            consentMarkdown: row[6], privacyPolicyURI: row[7], secretHash: row[8], ownerUserID: row[9], allowImplicit: row[10],
            firstParty: row[12], accessTokenLifetime: row[13], refreshTokenLifetime: row[14],
            idTokenSigningAlgorithm: SigningAlgorithm(rawValue: row[15]) ?? .rs256,
            postLogoutRedirectURIs: logoutURIs.split(separator: "\n").map(String.init),
            registration: ClientRegistration(rawValue: row[17]) ?? .administrator, registrationAccessTokenHash: row[18],
            metadataExpiresAt: (row[19] as Double?).map(Date.init(storeValue:)),
            requirePushedAuthorizationRequests: row[20], allowDeviceCode: row[21], createdAt: Date(storeValue: row[11])
        )
    }

    /// Runs ``AccessRevocation``'s statements for the user (and one client) inside a write.
    static func revokeAccess(userID: String, clientID: ClientID?, at: Date, _ db: Database) throws {
        for statement in AccessRevocation.statements(oneClient: clientID != nil) {
            let arguments = StatementArguments(
                statement.parameters.map { parameter -> (any DatabaseValueConvertible)? in
                    switch parameter {
                    case .at: at.storeValue
                    case .user: userID
                    case .client: clientID?.rawValue
                    }
                })
            try db.run(sql: statement.sql, arguments: arguments)
        }
    }
}
