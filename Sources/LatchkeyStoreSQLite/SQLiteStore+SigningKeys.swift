import Foundation
import GRDB
import LatchkeyServer

// The signing keys (OpenID Connect ID tokens, JWT access tokens).
extension SQLiteStore {
    public func signingKeys(at: Date) async throws -> [SigningKeyRecord] {
        try await read { db in
            try db.rows(
                sql: """
                    SELECT kid, algorithm, public_jwk, sealed_private_key, created_at, activates_at, published_until
                    FROM signing_keys WHERE published_until IS NULL OR published_until > ? ORDER BY created_at, kid
                    """, arguments: [at.storeValue]
            ).compactMap { row in
                guard let algorithm = SigningAlgorithm(rawValue: row[1]) else { return nil }
                return SigningKeyRecord(
                    kid: row[0], algorithm: algorithm, publicJWK: row[2], sealedPrivateKey: row[3],
                    createdAt: Date(storeValue: row[4]), activatesAt: Date(storeValue: row[5]),
                    publishedUntil: (row[6] as Double?).map(Date.init(storeValue:)))
            }
        }
    }

    public func insertSigningKey(_ key: SigningKeyRecord, retiredKeysPublishedUntil: Date) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE signing_keys SET published_until = ? WHERE algorithm = ? AND published_until IS NULL",
                arguments: [retiredKeysPublishedUntil.storeValue, key.algorithm.rawValue])
            try db.run(
                sql: """
                    INSERT INTO signing_keys (kid, algorithm, public_jwk, sealed_private_key, created_at, activates_at,
                        published_until)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    key.kid, key.algorithm.rawValue, key.publicJWK, key.sealedPrivateKey, key.createdAt.storeValue,
                    key.activatesAt.storeValue, key.publishedUntil?.storeValue,
                ])
        }
    }
}
