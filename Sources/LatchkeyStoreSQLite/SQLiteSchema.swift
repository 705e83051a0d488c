import GRDB
import LatchkeyServer

/// The SQLite store's schema: the shared list of steps (``SchemaMigration/all``) applied through
/// GRDB's migrator, which records each step's identifier in `grdb_migrations`.
enum SQLiteSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in SchemaMigration.all {
            let statements = migration.statements(in: .sqlite)
            migrator.registerMigration(migration.identifier) { db in
                for statement in statements { try db.execute(sql: statement) }
            }
        }
        return migrator
    }
}
