import ArgumentParser
import Foundation
import LatchkeyPasswords
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyStoreSQLite

/// Where the data lives; the same for `serve` and the admin commands, which may run beside it.
struct StoreOptions: ParsableArguments {
    @Option(help: "Folder holding the SQLite database (created if missing).")
    var dataDir: String = ProcessInfo.processInfo.environment["LATCHKEY_DATA_DIR"] ?? "latchkey-data"

    @Option(
        name: .customLong("database-url"),
        help:
            "PostgreSQL instead of SQLite, for several instances: postgres://user:password@host:5432/db[?sslmode=require]. Also LATCHKEY_DATABASE_URL."
    )
    var databaseURLOption: String?

    /// `--database-url`, else `$LATCHKEY_DATABASE_URL`.
    var databaseURL: String? { databaseURLOption ?? ProcessInfo.processInfo.environment["LATCHKEY_DATABASE_URL"] }

    /// Opens the store, bringing its schema up to date (safely when several instances start at once).
    func openStore() async throws -> any Store {
        do {
            if let databaseURL {
                return try await PostgresStore.open(url: databaseURL)
            }
            try FileManager.default.createDirectory(
                atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return try SQLiteStore(path: (dataDir as NSString).appendingPathComponent("latchkey.sqlite"))
        } catch let error as StoreError {
            throw ValidationError(error.description)
        }
    }

    /// Where the data is, for messages.
    var location: String {
        databaseURL.map { url in
            // Never print the password.
            guard var components = URLComponents(string: url) else { return "PostgreSQL" }
            components.password = components.password == nil ? nil : "***"
            return components.string ?? "PostgreSQL"
        } ?? dataDir
    }

    func administration() async throws -> Administration {
        bootstrapLogging()
        return Administration(store: try await openStore(), passwordHasher: BcryptPasswordHasher())
    }
}

/// `--json` output: one JSON object per command, keys sorted.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func printJSON(_ object: [String: Any?]) throws {
        let cleaned = object.mapValues { $0 ?? NSNull() }
        // JSONSerialization traps on a value it cannot write; a mistake here is a message, not a crash.
        guard JSONSerialization.isValidJSONObject(cleaned) else { throw fail("internal error: output not expressible as JSON") }
        let data = try JSONSerialization.data(withJSONObject: cleaned, options: [.sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
    }
}

/// An error message on stderr and a non-zero exit, for mistakes a person can fix. (A concrete
/// return type: with `some Error` Swift 6.3.1 crashed in IRGen on a release build.)
func fail(_ message: String) -> ValidationError {
    ValidationError(message)
}
