import Foundation
import LatchkeyServer
import PostgresNIO

// The PostgreSQL driver of the store's SQL (LatchkeyServer's `Store/SQL/`): a statement on its own
// runs on any pooled connection as its own transaction; several run in one transaction.
extension PostgresStore: SQLDatabase {
    public func fetch<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        let query = statement.postgresQuery()
        return try await perform(operation: operation) { client in
            var result: [T] = []
            for try await row in try await client.query(query) {
                result.append(try map(PostgresSQLRow(row: row.makeRandomAccess())))
            }
            return result
        }
    }

    public func execute(_ steps: [SQLStep], operation: String) async throws -> [Int]? {
        // Each statement answers a row per row it changed, so that its count can be read.
        let queries = steps.map { $0.statement.postgresQuery(suffix: " RETURNING 1") }
        if steps.count == 1 {
            let count = try await perform(operation: operation) { client in try await client.query(queries[0]).count() }
            return steps[0].isRequired && count == 0 ? nil : [count]
        }
        let logger = self.logger
        return try await perform(operation: operation) { client in
            // A transaction PostgreSQL ended to break a deadlock, or could not serialise, did nothing:
            // it runs again, a few times, rather than fail a request that only met another at the
            // wrong moment.
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try await client.withTransaction(logger: logger) { connection in
                        var counts: [Int] = []
                        for (step, query) in zip(steps, queries) {
                            let count = try await connection.query(query, logger: logger).count()
                            // Thrown, so that the transaction rolls back what the earlier steps did.
                            if step.isRequired && count == 0 { throw RequiredStepChangedNothing() }
                            counts.append(count)
                        }
                        return counts
                    }
                } catch let error as PostgresTransactionError where error.closureError is RequiredStepChangedNothing {
                    return nil
                } catch let error as PostgresTransactionError
                    where attempt < Self.transactionAttempts && error.metAnotherTransaction != nil
                {
                    logger.warning(
                        "transaction run again",
                        metadata: ["operation": "\(operation)", "sqlstate": "\(error.metAnotherTransaction ?? "")"])
                    self.retries.add(1, ordering: .relaxed)
                    StoreMetrics.recordTransactionRetry()
                    // A moment apart, so that it does not meet the same transaction again at once.
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...10) * attempt))
                }
            }
        }
    }

    /// How many times a transaction runs before its deadlock or serialisation failure is the caller's.
    static let transactionAttempts = 3

    public func executeReturning<T: Sendable>(
        _ statement: SQLStatement, operation: String, _ map: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> [T] {
        try await fetch(statement, operation: operation, map)
    }

    public func appliedSchemaSteps() async throws -> Int {
        try await fetch("SELECT count(*) FROM latchkey_migrations", operation: #function) { try $0.int(0) }.first ?? 0
    }
}

private struct RequiredStepChangedNothing: Error {}

extension PostgresTransactionError {
    /// The SQLSTATE when PostgreSQL rolled the transaction back for meeting another one, `40P01`
    /// (deadlock_detected) or `40001` (serialization_failure), and the rollback went through; else nil.
    var metAnotherTransaction: String? {
        guard rollbackError == nil, let error = (closureError ?? commitError) as? PSQLError,
            let state = error.serverInfo?[.sqlState], state == "40P01" || state == "40001"
        else { return nil }
        return state
    }
}

/// A row of a result, as ``SQLRow`` reads it.
struct PostgresSQLRow: SQLRow {
    let row: PostgresRandomAccessRow

    func optionalString(_ index: Int) throws -> String? { try row[index].decode(String?.self) }
    func optionalInt(_ index: Int) throws -> Int? { try row[index].decode(Int?.self) }
    func optionalDouble(_ index: Int) throws -> Double? { try row[index].decode(Double?.self) }
    func optionalBool(_ index: Int) throws -> Bool? { try row[index].decode(Bool?.self) }
}

extension SQLStatement {
    /// The values, as PostgreSQL binds them, each with its type even when `NULL`.
    var bindings: PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): bindings.append(text)
            case .integer(let integer): bindings.append(integer)
            case .real(let real): bindings.append(real)
            case .boolean(let boolean): bindings.append(boolean)
            }
        }
        return bindings
    }

    /// The statement with numbered placeholders, followed by `suffix`.
    func postgresQuery(suffix: String = "") -> PostgresQuery {
        PostgresQuery(unsafeSQL: numberedSQL + suffix, binds: bindings)
    }
}
