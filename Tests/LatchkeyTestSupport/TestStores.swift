import Foundation
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyStoreSQLite
import Logging
import PostgresNIO

/// The stores a test can run against.
public enum StoreKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite, postgres
    public var description: String { rawValue }
}

/// Fresh, empty stores for tests: a SQLite file in a new folder, or a new PostgreSQL database on
/// the server named by `LATCHKEY_TEST_DATABASE_URL` (scripts/test starts one).
public enum TestStores {
    /// The maintenance URL of the test PostgreSQL server, if one runs.
    public static var postgresURL: String? { ProcessInfo.processInfo.environment["LATCHKEY_TEST_DATABASE_URL"] }

    /// The kinds to test here: both when PostgreSQL is available, else SQLite alone (scripts/test
    /// always provides PostgreSQL; CI refuses to run without it).
    public static var kinds: [StoreKind] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    /// A new, empty store of `kind`.
    public static func make(_ kind: StoreKind) async throws -> any Store {
        switch kind {
        case .sqlite:
            let directory = try Scratch.folder("store")
            return try SQLiteStore(path: directory.appendingPathComponent("latchkey.sqlite").path)
        case .postgres:
            // A generous timeout: the suite checks what operations mean, and with the suites
            // running side by side on two cores a statement may wait behind other tests' work.
            return try await PostgresStore.open(url: try await newDatabaseURL(), operationTimeout: .seconds(30))
        }
    }

    /// Creates a new database on the test server and returns its URL.
    public static func newDatabaseURL() async throws -> String {
        guard let base = postgresURL, var components = URLComponents(string: base) else {
            throw FixtureError("LATCHKEY_TEST_DATABASE_URL is not set: run scripts/test, which starts PostgreSQL")
        }
        let name = "latchkey_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await withPostgres(url: base) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        components.path = "/" + name
        return components.string!
    }

    /// Runs `body` with a plain PostgreSQL client (no Latchkey store) on the database at `url`.
    public static func withPostgres<T: Sendable>(url: String, _ body: (PostgresClient) async throws -> T) async throws -> T {
        guard let components = URLComponents(string: url) else { throw FixtureError("not a URL: \(url)") }
        let client = PostgresClient(
            configuration: .init(
                host: components.host ?? "127.0.0.1", port: components.port ?? 5432, username: components.user ?? "postgres",
                password: components.password, database: String(components.path.dropFirst()), tls: .disable))
        let runner = Task { await client.run() }
        defer { runner.cancel() }
        return try await body(client)
    }
}
