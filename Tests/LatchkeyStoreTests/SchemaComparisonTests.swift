import Foundation
import GRDB
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyStoreSQLite
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// The two stores apply one list of schema steps; this proves the result is the same schema, so
/// the two cannot drift apart again (an index one store has and the other lacks, a column added
/// to one only).
@Suite("Schema comparison")
struct SchemaComparisonTests {
    @Test(
        "An empty SQLite and an empty PostgreSQL database, migrated, have the same tables, columns and indexes",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test starts PostgreSQL)"))
    func sameSchema() async throws {
        let sqlite = try await Self.sqliteSchema()
        let postgres = try await Self.postgresSchema()
        #expect(!sqlite.columns.isEmpty)
        #expect(sqlite.columns == postgres.columns)
        #expect(sqlite.indexes == postgres.indexes)
        #expect(sqlite.uniqueKeys == postgres.uniqueKeys)
        // The index that disconnecting an app needs, which SQLite once lacked.
        #expect(sqlite.indexes.contains("tokens_user_client ON tokens(user_id, client_id)"))
    }

    @Test("Every step has a distinct number, in order, and a distinct name")
    func stepsAreNumbered() {
        let steps = SchemaMigration.all
        #expect(steps.map(\.number) == Array(1...steps.count))
        #expect(Set(steps.map(\.identifier)).count == steps.count)
        #expect(steps.first?.identifier == "0001_initial")
    }

    /// A schema as both stores can describe it. Types are compared by kind: SQLite has no boolean
    /// (the shared steps declare `{boolean}`, an INTEGER there), and a primary-key column counts as
    /// NOT NULL, as PostgreSQL makes it.
    struct Schema: Equatable {
        /// `table.column kind [not null] [primary key]`.
        var columns: Set<String> = []
        /// `name ON table(columns)`, for the indexes the steps create by name.
        var indexes: Set<String> = []
        /// `table(columns)` for each UNIQUE constraint.
        var uniqueKeys: Set<String> = []
    }

    static let bookkeeping: Set<String> = ["grdb_migrations", "latchkey_migrations"]

    static func kind(_ declared: String) -> String {
        switch declared.lowercased() {
        case "text": "text"
        case "real", "double precision": "real"
        case "integer", "boolean": "integer"
        default: declared.lowercased()
        }
    }

    static func column(_ table: String, _ name: String, _ type: String, notNull: Bool, primaryKey: Bool) -> String {
        "\(table).\(name) \(kind(type))" + (notNull || primaryKey ? " not null" : "") + (primaryKey ? " primary key" : "")
    }

    static func sqliteSchema() async throws -> Schema {
        let directory = try Scratch.folder("schema")
        let path = directory.appendingPathComponent("latchkey.sqlite").path
        _ = try SQLiteStore(path: path)
        return try await DatabaseQueue(path: path).read { db in
            var schema = Schema()
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            for table in tables where !bookkeeping.contains(table) {
                for row in try Row.fetchAll(
                    db, sql: "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)", arguments: [table])
                {
                    schema.columns.insert(
                        column(
                            table, row["name"], row["type"], notNull: row["notnull"] as Int != 0, primaryKey: row["pk"] as Int > 0
                        ))
                }
                for index in try Row.fetchAll(
                    db, sql: "SELECT name, \"unique\", origin FROM pragma_index_list(?)", arguments: [table])
                {
                    let name: String = index["name"]
                    let columns = try String.fetchAll(
                        db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [name]
                    ).joined(separator: ", ")
                    switch index["origin"] as String {
                    case "c": schema.indexes.insert("\(name) ON \(table)(\(columns))")
                    case "u": schema.uniqueKeys.insert("\(table)(\(columns))")
                    default: break  // "pk": the primary key, compared with the columns
                    }
                }
            }
            return schema
        }
    }

    static func postgresSchema() async throws -> Schema {
        let url = try await TestStores.newDatabaseURL()
        let store = try await PostgresStore.open(url: url)
        store.shutdown()
        return try await TestStores.withPostgres(url: url) { client in
            var schema = Schema()
            var primaryKeys = Set<String>()
            for try await (table, column, kind) in try await client.query(
                """
                SELECT k.table_name, k.column_name, c.constraint_type FROM information_schema.table_constraints c
                JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
                WHERE c.table_schema = 'public' AND c.constraint_type = 'PRIMARY KEY'
                """
            ).decode((String, String, String).self) where kind == "PRIMARY KEY" {
                primaryKeys.insert("\(table).\(column)")
            }
            for try await (table, name, type, nullable) in try await client.query(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'public'"
            ).decode((String, String, String, String).self) where !bookkeeping.contains(table) {
                schema.columns.insert(
                    column(table, name, type, notNull: nullable == "NO", primaryKey: primaryKeys.contains("\(table).\(name)")))
            }
            // Indexes that back a constraint are named by PostgreSQL (…_pkey, …_key); the others
            // are the steps' own.
            var constraintIndexes = Set<String>()
            for try await (name, type, table, columns) in try await client.query(
                """
                SELECT c.conname, c.contype::text, t.relname,
                    (SELECT string_agg(a.attname, ', ' ORDER BY array_position(c.conkey, a.attnum)) FROM pg_attribute a
                     WHERE a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey))
                FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
                WHERE n.nspname = 'public' AND c.contype IN ('p', 'u')
                """
            ).decode((String, String, String, String).self) where !bookkeeping.contains(table) {
                constraintIndexes.insert(name)
                if type == "u" { schema.uniqueKeys.insert("\(table)(\(columns))") }
            }
            for try await (name, table, definition) in try await client.query(
                "SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            ).decode((String, String, String).self) where !bookkeeping.contains(table) && !constraintIndexes.contains(name) {
                // CREATE INDEX name ON public.table USING btree (a, b)
                let columns = definition.split(separator: "(").last.map { $0.dropLast() } ?? ""
                schema.indexes.insert("\(name) ON \(table)(\(columns))")
            }
            return schema
        }
    }
}

/// A PostgreSQL database made before the one list of steps kept a single version number in
/// `latchkey_schema`; opening it adopts those steps instead of running them again.
@Suite("PostgreSQL schema upgrade")
struct PostgresLegacySchemaTests {
    @Test(
        "A database at the old version 3 is adopted: its steps are recorded, none runs again, its data stays",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test starts PostgreSQL)"))
    func adoptsLegacyVersion() async throws {
        // What a store of that release had: steps 1 to 5 (and step 6's index, which those stores
        // already had), recorded as version 3, with a user in it.
        let url = try await TestStores.newDatabaseURL()
        try await TestStores.withPostgres(url: url) { client in
            for step in SchemaMigration.all.prefix(5) {
                for statement in step.statements(in: .postgres) { try await client.query(PostgresQuery(unsafeSQL: statement)) }
            }
            try await client.query("CREATE INDEX tokens_user_client ON tokens(user_id, client_id)")
            try await client.query("CREATE TABLE latchkey_schema (version integer NOT NULL)")
            try await client.query("INSERT INTO latchkey_schema (version) VALUES (3)")
            try await client.query(
                "INSERT INTO users (id, username, password_hash, created_at) VALUES ('u1', 'alice', 'x', 0)")
        }
        let reopened = try await PostgresStore.open(url: url)
        #expect(try await reopened.user(username: "alice")?.id == "u1")
        #expect(try await reopened.user(username: "alice")?.role == UserRole.none, "the later steps ran")
        reopened.shutdown()
        try await TestStores.withPostgres(url: url) { client in
            var identifiers: [String] = []
            for try await identifier in try await client.query("SELECT identifier FROM latchkey_migrations ORDER BY identifier")
                .decode(String.self)
            {
                identifiers.append(identifier)
            }
            #expect(identifiers == SchemaMigration.all.map(\.identifier))
            var legacy = true
            for try await exists in try await client.query("SELECT to_regclass('latchkey_schema') IS NOT NULL").decode(Bool.self)
            {
                legacy = exists
            }
            #expect(!legacy, "the old version table is dropped")
        }
    }

    @Test(
        "A database with a step this build does not know is refused as too new",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test starts PostgreSQL)"))
    func refusesNewerSchema() async throws {
        let url = try await TestStores.newDatabaseURL()
        try await PostgresStore.open(url: url).shutdown()
        try await TestStores.withPostgres(url: url) { client in
            try await client.query("INSERT INTO latchkey_migrations (identifier) VALUES ('9999_from_the_future')")
        }
        await #expect(throws: StoreError.self) { _ = try await PostgresStore.open(url: url) }
    }
}
