import Foundation
import LatchkeyCore

// Assertions already used.
extension SQLDatabase {
    public func recordAssertion(hash: String, expiresAt: Date) async throws -> Bool {
        // One statement: of two requests racing with the same assertion, on one instance or two,
        // exactly one inserts the row.
        try await run(
            """
            INSERT INTO used_assertions (assertion_hash, expires_at) VALUES (\(hash), \(expiresAt))
            ON CONFLICT DO NOTHING
            """) == 1
    }
}
