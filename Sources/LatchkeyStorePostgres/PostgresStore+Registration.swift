import Foundation
import LatchkeyServer
import PostgresNIO

// Initial access tokens for dynamic client registration (RFC 7591).
extension PostgresStore {
    public func insertInitialAccessToken(_ token: InitialAccessToken) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO initial_access_tokens (token_hash, id, created_at, expires_at)
                VALUES (\(token.tokenHash), \(token.id), \(token.createdAt.timeIntervalSince1970),
                    \(token.expiresAt.timeIntervalSince1970))
                """)
        }
    }

    public func initialAccessToken(hash: String) async throws -> InitialAccessToken? {
        try await perform { client in
            try await client.query("SELECT * FROM initial_access_tokens WHERE token_hash = \(hash)").map(Self.initial).first
        }
    }

    public func initialAccessTokens() async throws -> [InitialAccessToken] {
        try await perform { client in
            try await client.query("SELECT * FROM initial_access_tokens ORDER BY created_at DESC, id").map(Self.initial)
        }
    }

    public func deleteInitialAccessToken(id: String) async throws -> Bool {
        try await perform { client in
            try await client.query("DELETE FROM initial_access_tokens WHERE id = \(id) RETURNING id").count() > 0
        }
    }

    static func initial(_ row: PostgresRandomAccessRow) throws -> InitialAccessToken {
        InitialAccessToken(
            id: try row.string("id"), tokenHash: try row.string("token_hash"), createdAt: try row.date("created_at"),
            expiresAt: try row.date("expires_at"))
    }
}
