import Foundation
import LatchkeyServer
import PostgresNIO

// The signing keys (OpenID Connect ID tokens, JWT access tokens).
extension PostgresStore {
    public func signingKeys(at: Date) async throws -> [SigningKeyRecord] {
        try await perform { client in
            try await client.query(
                """
                SELECT * FROM signing_keys WHERE published_until IS NULL OR published_until > \(at.timeIntervalSince1970)
                ORDER BY created_at, kid
                """
            ).map { row -> SigningKeyRecord? in
                guard let algorithm = SigningAlgorithm(rawValue: try row.string("algorithm")) else { return nil }
                return SigningKeyRecord(
                    kid: try row.string("kid"), algorithm: algorithm, publicJWK: try row.string("public_jwk"),
                    sealedPrivateKey: try row.string("sealed_private_key"), createdAt: try row.date("created_at"),
                    activatesAt: try row.date("activates_at"), publishedUntil: try row.optionalDate("published_until"))
            }.compactMap { $0 }
        }
    }

    public func insertSigningKey(_ key: SigningKeyRecord, retiredKeysPublishedUntil: Date) async throws {
        _ = try await transaction { connection, logger in
            try await connection.query(
                """
                UPDATE signing_keys SET published_until = \(retiredKeysPublishedUntil.timeIntervalSince1970)
                WHERE algorithm = \(key.algorithm.rawValue) AND published_until IS NULL
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO signing_keys (kid, algorithm, public_jwk, sealed_private_key, created_at, activates_at,
                    published_until)
                VALUES (\(key.kid), \(key.algorithm.rawValue), \(key.publicJWK), \(key.sealedPrivateKey),
                    \(key.createdAt.timeIntervalSince1970), \(key.activatesAt.timeIntervalSince1970),
                    \(key.publishedUntil?.timeIntervalSince1970))
                """, logger: logger)
            return true
        }
    }
}
