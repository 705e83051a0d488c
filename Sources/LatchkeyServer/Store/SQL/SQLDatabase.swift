import Foundation
import LatchkeyCore

/// One statement of a write transaction (``SQLDatabase/write(_:operation:)``).
public struct SQLStep: Sendable {
    public let statement: SQLStatement
    /// When the statement changes no row, the write stops there and is rolled back.
    public let isRequired: Bool

    /// A statement whose count of changed rows decides nothing on its own.
    public static func run(_ statement: SQLStatement) -> SQLStep { SQLStep(statement: statement, isRequired: false) }

    /// A statement that must change a row for the write to go on: the condition of a
    /// once-only operation (`UPDATE … WHERE consumed_at IS NULL`) or a row that must exist.
    public static func require(_ statement: SQLStatement) -> SQLStep { SQLStep(statement: statement, isRequired: true) }
}

/// A store whose operations are SQL, written once in `Store/SQL/` for both SQLite and PostgreSQL:
/// a driver gives three ways to run statements, and every role's operations come from the
/// extensions on this protocol. A driver may still answer an operation its own way where a
/// measurement showed it pays (PostgreSQL writes a grant in one statement and prepares the token
/// and client reads); its own method then takes the place of the shared one.
///
/// Statements that are not ``SQLStatement/isRunnable`` never reach a driver: a read finds no row,
/// and a write of which any statement is not runnable does nothing at all.
public protocol SQLDatabase: Store {
    /// Runs one statement that reads, mapping each row. `operation` names the store method, for
    /// ``StoreMetrics``.
    func fetch<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T]

    /// Runs `steps` in order in one transaction and answers how many rows each changed, or `nil`
    /// (everything rolled back) when a required step changed none. Answers only once committed.
    func execute(_ steps: [SQLStep], operation: String) async throws -> [Int]?

    /// Runs one statement that writes and returns rows (`… RETURNING`), in a transaction of its own.
    func executeReturning<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T]
}

extension SQLDatabase {
    /// Every row `statement` reads, mapped.
    func rows<T: Sendable>(
        _ statement: SQLStatement, operation: String = #function, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        guard statement.isRunnable else { return [] }
        return try await fetch(statement, operation: operation, map)
    }

    /// The first row `statement` reads, mapped.
    func row<T: Sendable>(
        _ statement: SQLStatement, operation: String = #function, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> T? {
        try await rows(statement, operation: operation, map).first
    }

    /// Runs `steps` in one transaction (``execute(_:operation:)``). When any step is not
    /// runnable, nothing is done and the answer is `nil`, as when a required step changes nothing:
    /// an operation is never carried out in part.
    func write(_ steps: [SQLStep], operation: String = #function) async throws -> [Int]? {
        guard !steps.isEmpty, steps.allSatisfy(\.statement.isRunnable) else { return nil }
        return try await execute(steps, operation: operation)
    }

    /// Runs one statement in a transaction of its own and answers how many rows it changed.
    @discardableResult
    func run(_ statement: SQLStatement, operation: String = #function) async throws -> Int {
        try await write([.run(statement)], operation: operation)?.first ?? 0
    }

    /// Runs an `INSERT` of a row the server made; one that stores nothing (a key that cannot be
    /// stored) is an error, not a silent loss.
    func insert(_ statement: SQLStatement, operation: String = #function) async throws {
        guard try await run(statement, operation: operation) == 1 else {
            throw StoreError.conflict("The row was not stored: a key or value in it cannot be stored.")
        }
    }

    /// The rows a statement that writes returns (`… RETURNING`), mapped.
    func returning<T: Sendable>(
        _ statement: SQLStatement, operation: String = #function, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        guard statement.isRunnable else { return [] }
        return try await executeReturning(statement, operation: operation, map)
    }
}
