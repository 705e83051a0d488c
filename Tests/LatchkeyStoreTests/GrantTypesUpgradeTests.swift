import Foundation
import GRDB
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyStoreSQLite
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// Schema step 18 turns the two per-grant columns of a client into its `grant_types` list.
@Suite("Client grant lists: the upgrade")
struct GrantTypesUpgradeTests {
    /// Clients as the release before step 18 stored them: `(id, type, allow_implicit, allow_device_code)`.
    static let oldClients: [(String, String, Bool, Bool)] = [
        ("app", "native", false, false), ("tv", "native", false, true), ("spa", "browser", true, false),
        ("portal", "web", false, true), ("job", "service", false, false),
    ]

    static let expected: [ClientID: [String]] = [
        "app": ["authorization_code", "refresh_token"],
        "tv": ["authorization_code", "refresh_token", GrantTypes.deviceCode],
        "spa": ["authorization_code", "implicit", "refresh_token"],
        "portal": ["authorization_code", "refresh_token", GrantTypes.deviceCode],
        "job": ["client_credentials"],
    ]

    static func insert(_ client: (String, String, Bool, Bool), boolean: (Bool) -> String) -> String {
        """
        INSERT INTO clients (id, type, name, redirect_uris, scopes, allow_implicit, allow_device_code, created_at)
        VALUES ('\(client.0)', '\(client.1)', 'App', 'https://a.example/cb', 'profile', \(boolean(client.2)),
            \(boolean(client.3)), 0)
        """
    }

    @Test("A SQLite store at step 17: each client's grants become its list, the flags' columns go")
    func sqlite() async throws {
        let directory = try Scratch.folder("upgrade")
        let path = directory.appendingPathComponent("latchkey.sqlite").path
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            for step in SchemaMigration.all.prefix(17) {
                for statement in step.statements(in: .sqlite) { try db.execute(sql: statement) }
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [step.identifier])
            }
            for client in Self.oldClients { try db.execute(sql: Self.insert(client) { $0 ? "1" : "0" }) }
        }
        try await Self.check(try SQLiteStore(path: path))
    }

    @Test(
        "A PostgreSQL store at step 17: each client's grants become its list, the flags' columns go",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test starts PostgreSQL)"))
    func postgres() async throws {
        let url = try await TestStores.newDatabaseURL()
        try await TestStores.withPostgres(url: url) { client in
            try await client.query("CREATE TABLE latchkey_migrations (identifier text PRIMARY KEY)")
            for step in SchemaMigration.all.prefix(17) {
                for statement in step.statements(in: .postgres) { try await client.query(PostgresQuery(unsafeSQL: statement)) }
                try await client.query("INSERT INTO latchkey_migrations (identifier) VALUES (\(step.identifier))")
            }
            for old in Self.oldClients {
                try await client.query(PostgresQuery(unsafeSQL: Self.insert(old) { $0 ? "true" : "false" }))
            }
        }
        let store = try await PostgresStore.open(url: url)
        defer { store.shutdown() }
        try await Self.check(store)
    }

    static func check(_ store: any Store) async throws {
        #expect(try await store.appliedSchemaSteps() == SchemaMigration.all.count)
        let clients = try await store.clients()
        #expect(Dictionary(uniqueKeysWithValues: clients.map { ($0.id, $0.grantTypes) }) == expected)
        #expect(try await store.implicitClientExists())
        let database = try #require(store as? any SQLDatabase)
        await #expect(throws: (any Error).self) {
            _ = try await database.fetch("SELECT allow_implicit FROM clients", operation: "test") { _ in true }
        }
    }
}
