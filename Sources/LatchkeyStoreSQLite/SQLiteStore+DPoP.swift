import Foundation
import GRDB
import LatchkeyServer

// DPoP proofs seen and server nonces (RFC 9449).
extension SQLiteStore {
    public func recordDPoPProof(hash: String, expiresAt: Date) async throws -> Bool {
        try await write { db in
            try db.run(
                sql: "INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                arguments: [hash, expiresAt.storeValue])
            return db.changesCount == 1
        }
    }

    public func insertDPoPNonce(hash: String, expiresAt: Date) async throws {
        try await write { db in
            try db.run(
                sql: "INSERT INTO dpop_nonces (nonce_hash, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                arguments: [hash, expiresAt.storeValue])
        }
    }

    public func isLiveDPoPNonce(hash: String, at: Date) async throws -> Bool {
        try await read { db in
            try db.row(
                sql: "SELECT 1 FROM dpop_nonces WHERE nonce_hash = ? AND expires_at > ?", arguments: [hash, at.storeValue]
            ) != nil
        }
    }
}
