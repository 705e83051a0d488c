import Foundation
import GRDB
import LatchkeyServer

// The SQLite driver of the store's SQL (LatchkeyServer's `Store/SQL/`): reads on the calling
// thread over the reader connections, writes in the next group commit.
extension SQLiteStore: SQLDatabase {
    public func fetch<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        try await read(operation: operation) { db in try Self.rows(statement, db, map) }
    }

    public func execute(_ steps: [SQLStep], operation: String) async throws -> [Int]? {
        do {
            return try await write(operation: operation) { db in
                try steps.map { step in
                    try db.cachedStatement(sql: step.statement.sql).execute(arguments: step.statement.arguments)
                    let changed = db.changesCount
                    // Thrown, so that the write's savepoint rolls back what the earlier steps did.
                    if step.isRequired && changed == 0 { throw RequiredStepChangedNothing() }
                    return changed
                }
            }
        } catch is RequiredStepChangedNothing {
            return nil
        }
    }

    public func executeReturning<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        try await write(operation: operation) { db in try Self.rows(statement, db, map) }
    }

    public func appliedSchemaSteps() async throws -> Int {
        try await fetch("SELECT count(*) FROM grdb_migrations", operation: #function) { try $0.int(0) }.first ?? 0
    }

    /// Runs `statement`, prepared once per connection and then reused (on these small queries
    /// SQLite's prepare costs about as much as the execution), mapping each row as it comes.
    private static func rows<T>(_ statement: SQLStatement, _ db: Database, _ map: (any SQLRow) throws -> T) throws -> [T] {
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: statement.sql), arguments: statement.arguments)
        var result: [T] = []
        while let row = try cursor.next() { result.append(try map(SQLiteRow(row: row))) }
        return result
    }
}

private struct RequiredStepChangedNothing: Error {}

/// A row of a result, as ``SQLRow`` reads it.
private struct SQLiteRow: SQLRow {
    let row: Row

    func optionalString(_ index: Int) throws -> String? { try row.decode(String?.self, atIndex: index) }
    func optionalInt(_ index: Int) throws -> Int? { try row.decode(Int?.self, atIndex: index) }
    func optionalDouble(_ index: Int) throws -> Double? { try row.decode(Double?.self, atIndex: index) }
    func optionalBool(_ index: Int) throws -> Bool? { try row.decode(Bool?.self, atIndex: index) }
}

extension SQLStatement {
    /// The values, as SQLite binds them (booleans as 0 and 1).
    var arguments: StatementArguments {
        // Through GRDB's initializer for optional existentials: its generic one over a sequence
        // of values applies a key path to each, which showed in profiles of the token read.
        StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .text(let text): text
                case .integer(let integer): integer
                case .real(let real): real
                case .boolean(let boolean): boolean
                }
            })
    }
}
