import Foundation
import LatchkeyCore

// Passkeys and their challenges (PasskeyStore).
extension SQLDatabase {
    public func insertPasskey(_ passkey: Passkey) async throws {
        try await insert(
            """
            INSERT INTO passkeys (\(sql: PasskeyColumns.list))
            VALUES (\(passkey.credentialID), \(passkey.userID), \(passkey.name), \(passkey.publicKey), \(passkey.signCount),
                \(passkey.backupEligible), \(passkey.createdAt), \(passkey.lastUsedAt))
            """)
    }

    public func passkeys(userID: UserID) async throws -> [Passkey] {
        try await rows(
            "SELECT \(sql: PasskeyColumns.list) FROM passkeys WHERE user_id = \(userID) ORDER BY created_at, credential_id",
            PasskeyColumns.read)
    }

    public func passkey(credentialID: CredentialID) async throws -> Passkey? {
        try await row(
            "SELECT \(sql: PasskeyColumns.list) FROM passkeys WHERE credential_id = \(credentialID)", PasskeyColumns.read)
    }

    public func usePasskey(credentialID: CredentialID, signCount: Int, at: Date) async throws -> Bool {
        try await run(
            """
            UPDATE passkeys SET sign_count = \(signCount), last_used_at = \(at)
            WHERE credential_id = \(credentialID) AND (sign_count < \(signCount) OR (sign_count = 0 AND \(signCount) = 0))
            """) == 1
    }

    public func deletePasskey(credentialID: CredentialID, userID: UserID) async throws -> Bool {
        try await run("DELETE FROM passkeys WHERE credential_id = \(credentialID) AND user_id = \(userID)") == 1
    }

    public func deletePasskeys(userID: UserID) async throws {
        try await run("DELETE FROM passkeys WHERE user_id = \(userID)")
    }

    public func insertPasskeyChallenge(_ challenge: PasskeyChallenge) async throws {
        try await insert(
            """
            INSERT INTO passkey_challenges (hash, session_id_hash, purpose, user_id, expires_at)
            VALUES (\(challenge.hash), \(challenge.sessionIDHash), \(challenge.purpose.rawValue), \(challenge.userID),
                \(challenge.expiresAt))
            """)
    }

    public func takePasskeyChallenge(hash: PasskeyChallengeHash, sessionIDHash: SessionIDHash, at: Date) async throws
        -> PasskeyChallenge?
    {
        try await returning(
            """
            DELETE FROM passkey_challenges WHERE hash = \(hash) AND session_id_hash = \(sessionIDHash) AND expires_at > \(at)
            RETURNING hash, session_id_hash, purpose, user_id, expires_at
            """
        ) { row in
            PasskeyChallenge(
                hash: try row.key(0), sessionIDHash: try row.key(1), purpose: try row.value(2), userID: try row.optionalKey(3),
                expiresAt: try row.date(4))
        }.first
    }
}

/// The columns of a passkey, in the order ``read(_:)`` reads them.
enum PasskeyColumns {
    static let list = "credential_id, user_id, name, public_key, sign_count, backup_eligible, created_at, last_used_at"

    @Sendable static func read(_ row: any SQLRow) throws -> Passkey {
        Passkey(
            credentialID: try row.key(0), userID: try row.key(1), name: try row.string(2), publicKey: try row.string(3),
            signCount: try row.int(4), backupEligible: try row.bool(5), createdAt: try row.date(6),
            lastUsedAt: try row.optionalDate(7))
    }
}
