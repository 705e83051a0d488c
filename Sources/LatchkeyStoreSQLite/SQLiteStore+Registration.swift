import Foundation
import GRDB
import LatchkeyServer

// Initial access tokens for dynamic client registration (RFC 7591).
extension SQLiteStore {
    public func insertInitialAccessToken(_ token: InitialAccessToken) async throws {
        try await write { db in
            try db.run(
                sql: "INSERT INTO initial_access_tokens (token_hash, id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [token.tokenHash, token.id, token.createdAt.storeValue, token.expiresAt.storeValue])
        }
    }

    public func initialAccessToken(hash: String) async throws -> InitialAccessToken? {
        try await read { db in
            try db.row(sql: "SELECT * FROM initial_access_tokens WHERE token_hash = ?", arguments: [hash]).map(Self.initial)
        }
    }

    public func initialAccessTokens() async throws -> [InitialAccessToken] {
        try await read { db in
            try db.rows(sql: "SELECT * FROM initial_access_tokens ORDER BY created_at DESC, id").map(Self.initial)
        }
    }

    public func deleteInitialAccessToken(id: String) async throws -> Bool {
        try await write { db in
            try db.run(sql: "DELETE FROM initial_access_tokens WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    private static func initial(_ row: Row) -> InitialAccessToken {
        InitialAccessToken(
            id: row["id"], tokenHash: row["token_hash"], createdAt: row.date("created_at"), expiresAt: row.date("expires_at"))
    }
}
