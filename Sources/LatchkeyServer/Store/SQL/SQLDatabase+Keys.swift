import Foundation
import LatchkeyCore

// Audit events for the Activity page, and the signing keys (ID tokens, JWT access tokens).
extension SQLDatabase {
    public func insertAuditEvents(_ events: [AuditEvent]) async throws {
        guard !events.isEmpty else { return }
        let statements: [SQLStatement] = events.map { event in
            """
            INSERT INTO audit_events (id, at, event, actor, user_id, client_id, details)
            VALUES (\(event.id), \(event.at), \(event.event), \(event.actor), \(event.userID), \(event.clientID),
                \(event.detailsJSON))
            """
        }
        // An event holding text that cannot be stored (a NUL) is left out, not the whole batch.
        let storable = statements.filter(\.isRunnable)
        guard !storable.isEmpty else { return }
        _ = try await write(storable.map { .run($0) })
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        // A filter left out matches every row: COALESCE(NULL, column) = column.
        try await rows(
            """
            SELECT id, at, event, actor, user_id, client_id, details FROM audit_events
            WHERE at >= \(query.since) AND event = COALESCE(\(query.event), event)
                AND COALESCE(user_id, '') = COALESCE(\(query.userID), user_id, '')
                AND COALESCE(client_id, '') = COALESCE(\(query.clientID), client_id, '')
            ORDER BY at DESC, id DESC LIMIT \(query.limit)
            """
        ) { row in
            AuditEvent(
                id: try row.string(0), at: try row.date(1), event: try row.string(2), actor: try row.optionalString(3),
                userID: try row.optionalString(4), clientID: try row.optionalString(5),
                details: AuditEvent.details(fromJSON: try row.string(6)))
        }
    }

    public func signingKeys(at: Date) async throws -> [SigningKeyRecord] {
        try await rows(
            """
            SELECT kid, algorithm, public_jwk, sealed_private_key, created_at, activates_at, published_until
            FROM signing_keys WHERE published_until IS NULL OR published_until > \(at) ORDER BY created_at, kid
            """
        ) { row -> SigningKeyRecord? in
            // A key of an algorithm this build does not know (written by a newer one) is not used.
            guard let algorithm = SigningAlgorithm(rawValue: try row.string(1)) else { return nil }
            return SigningKeyRecord(
                kid: try row.string(0), algorithm: algorithm, publicJWK: try row.string(2),
                sealedPrivateKey: try row.string(3), createdAt: try row.date(4), activatesAt: try row.date(5),
                publishedUntil: try row.optionalDate(6))
        }.compactMap { $0 }
    }

    public func insertSigningKey(_ key: SigningKeyRecord, retiredKeysPublishedUntil: Date) async throws {
        let steps: [SQLStep] = [
            .run(
                """
                UPDATE signing_keys SET published_until = \(retiredKeysPublishedUntil)
                WHERE algorithm = \(key.algorithm.rawValue) AND published_until IS NULL
                """),
            .require(
                """
                INSERT INTO signing_keys (kid, algorithm, public_jwk, sealed_private_key, created_at, activates_at,
                    published_until)
                VALUES (\(key.kid), \(key.algorithm.rawValue), \(key.publicJWK), \(key.sealedPrivateKey), \(key.createdAt),
                    \(key.activatesAt), \(key.publishedUntil))
                """),
        ]
        guard try await write(steps) != nil else { throw StoreError.conflict("The signing key was not stored.") }
    }
}
