import LatchkeyServer
import Logging
import PostgresNIO

/// The PostgreSQL store's schema: the shared list of steps (``SchemaMigration/all``), each recorded
/// by identifier in `latchkey_migrations` as GRDB records them for SQLite. All missing steps run in
/// one transaction holding an advisory lock, so instances starting together apply each step once.
enum PostgresSchema {
    /// Stores made before the shared list kept one version number in `latchkey_schema`; these are
    /// the shared steps each such version had applied (version 1 had also created the index of
    /// step 6, which is why that step says `IF NOT EXISTS`).
    static let legacyVersions: [Int: ClosedRange<Int>] = [1: 1...3, 2: 1...4, 3: 1...5]

    /// Applies the missing steps. - Returns: how many steps the schema has now.
    /// - Throws: ``StoreError/schemaTooNew(_:)`` for a schema with steps this build does not know.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            // Waiting for another instance's migration may take longer than a request may.
            try await connection.query("SET LOCAL lock_timeout = '60s'", logger: logger)
            try await connection.query("SET LOCAL statement_timeout = '60s'", logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(74617)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS latchkey_migrations (identifier text PRIMARY KEY)", logger: logger)
            var applied = Set<String>()
            for try await identifier in try await connection.query(
                "SELECT identifier FROM latchkey_migrations", logger: logger
            ).decode(String.self) {
                applied.insert(identifier)
            }
            if applied.isEmpty {
                applied = try await adoptLegacyVersion(connection, logger: logger)
            }
            let known = Set(SchemaMigration.all.map(\.identifier))
            if let unknown = applied.subtracting(known).sorted().last {
                throw StoreError.schemaTooNew(
                    "The database has schema step \(unknown), which this Latchkey does not know. Upgrade Latchkey.")
            }
            for migration in SchemaMigration.all where !applied.contains(migration.identifier) {
                for statement in migration.statements(in: .postgres) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO latchkey_migrations (identifier) VALUES (\(migration.identifier))", logger: logger)
            }
            return SchemaMigration.all.count
        }
    }

    /// Records the steps a store made before the shared list had applied, and drops its old
    /// version table. - Returns: those steps' identifiers (none for a new database).
    private static func adoptLegacyVersion(_ connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        var version: Int?
        for try await value in try await connection.query(
            "SELECT to_regclass('latchkey_schema') IS NOT NULL", logger: logger
        ).decode(Bool.self) where value {
            for try await stored in try await connection.query("SELECT version FROM latchkey_schema", logger: logger)
                .decode(Int.self)
            {
                version = stored
            }
        }
        guard let version else { return [] }
        guard let steps = legacyVersions[version] else {
            throw StoreError.schemaTooNew(
                "The database has schema version \(version), which this Latchkey does not know. Upgrade Latchkey.")
        }
        let identifiers = SchemaMigration.all.filter { steps.contains($0.number) }.map(\.identifier)
        for identifier in identifiers {
            try await connection.query("INSERT INTO latchkey_migrations (identifier) VALUES (\(identifier))", logger: logger)
        }
        try await connection.query("DROP TABLE latchkey_schema", logger: logger)
        return Set(identifiers)
    }
}
