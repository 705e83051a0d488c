import Foundation
import LatchkeyCore

// E-mailed links (AccountLinkStore).
extension SQLDatabase {
    public func insertAccountLink(_ link: AccountLink) async throws {
        var steps: [SQLStep] = []
        if let userID = link.userID {
            // Takes the user's row lock first (PostgreSQL), so two links made at once for one
            // account are made one after the other, and the later deletes the earlier.
            steps.append(.run("UPDATE users SET access_epoch = access_epoch WHERE id = \(userID)"))
            steps.append(
                .run(
                    """
                    DELETE FROM account_links
                    WHERE user_id = \(userID) AND purpose = \(link.purpose.rawValue) AND used_at IS NULL
                    """))
        }
        steps.append(
            .require(
                """
                INSERT INTO account_links (hash, purpose, user_id, email, pending_request_id, created_at, expires_at)
                VALUES (\(link.hash), \(link.purpose.rawValue), \(link.userID), \(link.email), \(link.pendingRequestID),
                    \(link.createdAt), \(link.expiresAt))
                """))
        guard try await write(steps) != nil else {
            throw StoreError.conflict("The link was not stored: a key or value in it cannot be stored.")
        }
    }

    public func accountLink(hash: AccountLinkHash, purpose: AccountLinkPurpose, at: Date) async throws -> AccountLink? {
        try await row(
            """
            SELECT hash, purpose, user_id, email, pending_request_id, created_at, expires_at, used_at FROM account_links
            WHERE hash = \(hash) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > \(at)
            """
        ) { row in
            AccountLink(
                hash: try row.key(0), purpose: try row.value(1), userID: try row.optionalKey(2), email: try row.string(3),
                pendingRequestID: try row.optionalKey(4), createdAt: try row.date(5), expiresAt: try row.date(6),
                usedAt: try row.optionalDate(7))
        }
    }

    public func verifyEmail(link: AccountLinkHash, at: Date) async throws -> Bool {
        let owner: SQLStatement = "(SELECT user_id FROM account_links WHERE hash = \(link))"
        let email: SQLStatement = "(SELECT email FROM account_links WHERE hash = \(link))"
        return try await write([
            .require(Self.use(link, .emailVerification, at: at)),
            .require(
                """
                UPDATE users SET email = \(email), email_verified = \(true), updated_at = \(at)
                WHERE id = \(owner) AND disabled_at IS NULL
                """),
        ]) != nil
    }

    public func resetPassword(link: AccountLinkHash, passwordHash: String, at: Date) async throws -> Bool {
        let owner: SQLStatement = "(SELECT user_id FROM account_links WHERE hash = \(link))"
        let steps: [SQLStep] =
            [
                .require(Self.use(link, .passwordReset, at: at)),
                .require("UPDATE users SET password_hash = \(passwordHash) WHERE id = \(owner) AND disabled_at IS NULL"),
                .run("DELETE FROM sessions WHERE user_id = \(owner) OR second_factor_user_id = \(owner)"),
                .run("DELETE FROM account_links WHERE user_id = \(owner) AND used_at IS NULL"),
            ] + AccessRevocation.steps(user: owner, client: nil, at: at)
        return try await write(steps) != nil
    }

    public func insertUser(_ user: User, invitation link: AccountLinkHash?, at: Date) async throws -> Bool {
        var steps: [SQLStep] = []
        if let link { steps.append(.require(Self.use(link, .invitation, at: at))) }
        steps.append(.require(UserColumns.insert(user)))
        return try await write(steps) != nil
    }

    public func recordServerFact(name: String, value: String, at: Date) async throws {
        try await run(
            """
            INSERT INTO server_facts (name, value, updated_at) VALUES (\(name), \(value), \(at))
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """)
    }

    public func serverFact(name: String) async throws -> String? {
        try await row("SELECT value FROM server_facts WHERE name = \(name)") { try $0.string(0) }
    }

    /// Marks a link used, if it still can be: the condition of every use, read again by
    /// PostgreSQL on the locked row, so of two uses at once one changes it and the other nothing.
    private static func use(_ link: AccountLinkHash, _ purpose: AccountLinkPurpose, at: Date) -> SQLStatement {
        """
        UPDATE account_links SET used_at = \(at)
        WHERE hash = \(link) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > \(at)
        """
    }
}
