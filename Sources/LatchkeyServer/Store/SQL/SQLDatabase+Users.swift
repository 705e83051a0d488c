import Foundation
import LatchkeyCore

// Scopes and users.
extension SQLDatabase {
    public func scopeCatalogue() async throws -> [ScopeDefinition] {
        try await rows("SELECT name, description FROM scopes ORDER BY name") {
            ScopeDefinition(name: try $0.string(0), description: try $0.string(1))
        }
    }

    public func saveScope(_ scope: ScopeDefinition) async throws {
        try await run(
            """
            INSERT INTO scopes (name, description) VALUES (\(scope.name), \(scope.description))
            ON CONFLICT (name) DO UPDATE SET description = excluded.description
            """)
    }

    public func deleteScope(named name: String) async throws -> Bool {
        try await run("DELETE FROM scopes WHERE name = \(name)") > 0
    }

    public func insertUser(_ user: User) async throws {
        try await insert(UserColumns.insert(user))
    }

    public func user(id: UserID) async throws -> User? {
        try await row("SELECT \(sql: UserColumns.list) FROM users WHERE id = \(id)", UserColumns.read)
    }

    public func user(username: Username) async throws -> User? {
        try await row("SELECT \(sql: UserColumns.list) FROM users WHERE username = \(username)", UserColumns.read)
    }

    public func users() async throws -> [User] {
        try await rows("SELECT \(sql: UserColumns.list) FROM users ORDER BY username", UserColumns.read)
    }

    public func usernameTaken(ignoringCase username: String) async throws -> Bool {
        try await row("SELECT 1 FROM users WHERE lower(username) = lower(\(username))") { _ in true } ?? false
    }

    public func users(email: String) async throws -> [User] {
        try await rows(
            "SELECT \(sql: UserColumns.list) FROM users WHERE lower(email) = lower(\(email)) ORDER BY created_at, id",
            UserColumns.read)
    }

    public func deleteUser(username: Username) async throws -> Bool {
        let id: SQLStatement = "(SELECT id FROM users WHERE username = \(username))"
        // The epoch moves first, as in every revocation of the user's access (AccessRevocation):
        // it locks the user's row, so a code being stored waits or finds it moved.
        var steps: [SQLStep] = [
            .require("UPDATE users SET access_epoch = access_epoch + 1 WHERE username = \(username)"),
            .run(LogoutQueue.enqueue(user: id, at: Date())),
        ]
        for table in [
            "sessions", "consents", "authorization_codes", "grants", "tokens", "account_links", "second_factors", "passkeys",
            "federated_identities",
        ] {
            steps.append(.run("DELETE FROM \(sql: table) WHERE user_id = \(id)"))
        }
        steps.append(.run("DELETE FROM sessions WHERE second_factor_user_id = \(id)"))
        steps.append(.run("DELETE FROM users WHERE username = \(username)"))
        return try await write(steps) != nil
    }

    public func setPasswordHash(username: Username, passwordHash: String) async throws -> Bool {
        let id: SQLStatement = "(SELECT id FROM users WHERE username = \(username))"
        let steps: [SQLStep] =
            [
                .require("UPDATE users SET password_hash = \(passwordHash) WHERE username = \(username)"),
                .run("DELETE FROM sessions WHERE user_id = \(id) OR second_factor_user_id = \(id)"),
                // A pending address change or reset asked from a session that just ended dies with it.
                .run("DELETE FROM account_links WHERE user_id = \(id) AND used_at IS NULL"),
            ] + AccessRevocation.steps(user: id, client: nil, at: Date())
        return try await write(steps) != nil
    }

    public func setUserRole(id: UserID, role: UserRole) async throws -> Bool {
        try await run("UPDATE users SET role = \(role.rawValue) WHERE id = \(id)") > 0
    }

    public func setUserDisabled(id: UserID, at disabledAt: Date?) async throws -> Bool {
        var steps: [SQLStep] = [.require("UPDATE users SET disabled_at = \(disabledAt) WHERE id = \(id)")]
        if let disabledAt {
            steps.append(.run("DELETE FROM sessions WHERE user_id = \(id) OR second_factor_user_id = \(id)"))
            steps.append(.run("DELETE FROM account_links WHERE user_id = \(id) AND used_at IS NULL"))
            steps += AccessRevocation.steps(user: "\(id)", client: nil, at: disabledAt)
        }
        return try await write(steps) != nil
    }

    public func setSecondFactorRequired(id: UserID, _ required: Bool) async throws -> Bool {
        try await run("UPDATE users SET second_factor_required = \(required) WHERE id = \(id)") > 0
    }

    public func setUserProfile(id: UserID, displayName: String?, email: String?, emailVerified: Bool, at: Date) async throws
        -> Bool
    {
        try await run(
            """
            UPDATE users SET display_name = \(displayName), email = \(email), email_verified = \(emailVerified),
                updated_at = \(at)
            WHERE id = \(id)
            """) > 0
    }
}

/// The columns of a user read, in the order ``read(_:)`` reads them.
enum UserColumns {
    static let list =
        """
        id, username, display_name, password_hash, created_at, role, disabled_at, email, email_verified, updated_at, \
        access_epoch, must_verify_email, second_factor_required
        """

    /// The `INSERT` of a new user.
    static func insert(_ user: User) -> SQLStatement {
        """
        INSERT INTO users (id, username, display_name, password_hash, role, disabled_at, email, email_verified,
            updated_at, created_at, must_verify_email, second_factor_required)
        VALUES (\(user.id), \(user.username), \(user.displayName), \(user.passwordHash), \(user.role.rawValue),
            \(user.disabledAt), \(user.email), \(user.emailVerified), \(user.updatedAt), \(user.createdAt),
            \(user.mustVerifyEmail), \(user.secondFactorRequired))
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> User {
        User(
            id: try row.key(0), username: try row.key(1), displayName: try row.optionalString(2),
            passwordHash: try row.string(3), role: try row.value(5), disabledAt: try row.optionalDate(6),
            email: try row.optionalString(7), emailVerified: try row.bool(8), updatedAt: try row.optionalDate(9),
            createdAt: try row.date(4), accessEpoch: try row.int(10), mustVerifyEmail: try row.bool(11),
            secondFactorRequired: try row.bool(12))
    }
}
