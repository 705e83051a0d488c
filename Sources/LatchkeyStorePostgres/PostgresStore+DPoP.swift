import Foundation
import LatchkeyServer
import PostgresNIO

// DPoP proofs seen and server nonces (RFC 9449).
extension PostgresStore {
    public func recordDPoPProof(hash: String, expiresAt: Date) async throws -> Bool {
        try await perform { client in
            try await client.query(
                """
                INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES (\(hash), \(expiresAt.timeIntervalSince1970))
                ON CONFLICT DO NOTHING RETURNING proof_hash
                """
            ).count() == 1
        }
    }

    public func insertDPoPNonce(hash: String, expiresAt: Date) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO dpop_nonces (nonce_hash, expires_at) VALUES (\(hash), \(expiresAt.timeIntervalSince1970))
                ON CONFLICT DO NOTHING
                """)
        }
    }

    public func isLiveDPoPNonce(hash: String, at: Date) async throws -> Bool {
        try await perform { client in
            try await client.query(
                "SELECT 1 FROM dpop_nonces WHERE nonce_hash = \(hash) AND expires_at > \(at.timeIntervalSince1970)"
            ).count() > 0
        }
    }
}
