import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The store for several instances side by side: PostgreSQL through a pool of connections.
///
/// Each operation is one statement or one transaction; the once-only operations are conditional
/// updates (`… WHERE consumed_at IS NULL RETURNING …`) that PostgreSQL serializes on the row, so
/// any number of instances agree on the winner. An operation that cannot finish within
/// ``operationTimeout`` (the database is down or overloaded) fails with
/// ``StoreError/unavailable(_:)``, which the server answers with 503.
public final class PostgresStore: Store {
    let client: PostgresClient
    let logger: Logger
    private let runner: Task<Void, Never>
    /// How long one store operation may take before it is given up as unavailable.
    public let operationTimeout: Duration
    /// Transactions this store ran again after a deadlock or serialisation failure (see
    /// ``transactionsRunAgain``).
    let retries = Atomic<Int>(0)

    /// How many transactions this store has run again because PostgreSQL ended them for a deadlock
    /// or a serialisation failure: a test that races writes expects none.
    public var transactionsRunAgain: Int { retries.load(ordering: .relaxed) }

    /// Connects (lazily, through the pool) and brings the schema up to date.
    /// - Parameter url: `postgres://user:password@host:port/database`, with `?sslmode=require`
    ///   (or `verify-full`) for TLS with certificate verification, `sslmode=prefer` for TLS when offered.
    public static func open(url: String, logger: Logger = PostgresStore.defaultLogger, operationTimeout: Duration = .seconds(5))
        async throws -> PostgresStore
    {
        let store = try PostgresStore(configuration: configuration(url: url), logger: logger, operationTimeout: operationTimeout)
        do {
            // Migrations may wait for another instance's, and DDL is slow on a busy server: a minute.
            _ = try await store.perform(timeout: .seconds(60)) { client in
                try await PostgresSchema.migrate(client, logger: logger)
            }
        } catch {
            store.shutdown()
            throw error
        }
        return store
    }

    private init(configuration: PostgresClient.Configuration, logger: Logger, operationTimeout: Duration) throws {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.operationTimeout = operationTimeout
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    /// Warnings and errors only: the pool reports every reconnection attempt at `info`.
    public static var defaultLogger: Logger {
        var logger = Logger(label: "latchkey.postgres")
        logger.logLevel = .warning
        return logger
    }

    /// Closes the pool's connections.
    public func shutdown() { runner.cancel() }
}

extension PostgresStore: Service {
    /// Ties the pool to a service group: waits for the group's graceful shutdown, then closes the
    /// pool and returns once its connections are closed. Placed before the HTTP server in the
    /// group, it is shut down after the server has finished the requests in flight.
    ///
    /// (The pool itself starts running when the store opens, not here: the schema must be brought
    /// up to date before the group starts the HTTP server, and the command-line tools use the store
    /// without any group.)
    public func run() async {
        try? await gracefulShutdown()
        shutdown()
        await runner.value
    }

    static func configuration(url text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""),
            let host = url.host, !host.isEmpty, let user = url.user
        else {
            throw StoreError.unavailable("The database URL must look like postgres://user:password@host:5432/database")
        }
        let mode = url.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw StoreError.unavailable("Unknown sslmode \(mode): use disable, prefer or require.")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        var configuration = PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: url.password?.removingPercentEncoding, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = 16
        // A statement that waits longer than this on locks or work is cancelled by the server.
        configuration.options.additionalStartupParameters = [("statement_timeout", "5000"), ("lock_timeout", "5000")]
        return configuration
    }

    /// Runs `body` against the pool with the operation timeout, mapping failures to ``StoreError``.
    /// `operation` names the store method, for ``StoreMetrics``.
    func perform<T: Sendable>(
        timeout: Duration? = nil, operation: String = #function,
        _ body: @escaping @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = self.client
        let timeout = timeout ?? operationTimeout
        StoreMetrics.postgresOperationsInFlight.increment()
        defer { StoreMetrics.postgresOperationsInFlight.decrement() }
        do {
            return try await StoreMetrics.measure(store: "postgres", operation: operation) {
                try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addTask { try await body(client) }
                    group.addTask {
                        try await Self.elapse(timeout)
                        return nil
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next(), let value = first else {
                        throw StoreError.unavailable("The database did not answer within \(timeout).")
                    }
                    return value
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Returns after `duration`, or throws when cancelled first. The timer is the event loop's own
    /// (the one running the caller, where there is one): `Task.sleep` hands every timer to
    /// Dispatch, whose manager thread a system call wakes, and profiles of PostgreSQL workloads
    /// showed that costing about a tenth of the instances' CPU, a timer per store operation.
    static func elapse(_ duration: Duration) async throws {
        let (seconds, attoseconds) = duration.components
        let timer = PostgresClient.defaultEventLoopGroup.any().scheduleTask(
            in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        ) {}
        try await withTaskCancellationHandler {
            try await timer.futureResult.get()
        } onCancel: {
            timer.cancel()
        }
    }

    /// Runs `body` in one transaction.
    func transaction<T: Sendable>(
        operation: String = #function, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        let logger = self.logger
        return try await perform(operation: operation) { client in
            try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
        }
    }

    static func mapped(_ error: any Error) -> any Error {
        if let error = error as? StoreError { return error }
        if let transaction = error as? PostgresTransactionError, let inner = transaction.closureError ?? transaction.beginError {
            return mapped(inner)
        }
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            if state == "23505" { return StoreError.conflict(error.serverInfo?[.message] ?? "already exists") }
            return StoreError.unavailable("database error \(state): \(error.serverInfo?[.message] ?? "")")
        }
        return StoreError.unavailable("\(String(reflecting: error))")
    }
}

extension PostgresRowSequence {
    /// How many rows came back (for `UPDATE … RETURNING`).
    func count() async throws -> Int {
        var count = 0
        for try await _ in self { count += 1 }
        return count
    }
}
