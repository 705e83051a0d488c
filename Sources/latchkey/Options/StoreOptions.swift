import ArgumentParser
import Foundation
import LatchkeyHTTP
import LatchkeyServer
import LatchkeyStoreSQLite

/// Where the data lives; the same for `serve` and the admin commands, which may run beside it.
struct StoreOptions: ParsableArguments {
    @Option(help: "Folder holding the SQLite database (created if missing).")
    var dataDir: String = ProcessInfo.processInfo.environment["LATCHKEY_DATA_DIR"] ?? "latchkey-data"

    func openStore() throws -> SQLiteStore {
        do {
            try FileManager.default.createDirectory(
                atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return try SQLiteStore(path: (dataDir as NSString).appendingPathComponent("latchkey.sqlite"))
        } catch let error as StoreError {
            throw ValidationError(error.description)
        }
    }

    func administration() throws -> Administration {
        Administration(store: try openStore(), passwordHasher: BcryptPasswordHasher())
    }
}

/// `--json` output: one JSON object per command, keys sorted.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func printJSON(_ object: [String: Any?]) throws {
        let cleaned = object.mapValues { $0 ?? NSNull() }
        let data = try JSONSerialization.data(withJSONObject: cleaned, options: [.sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
    }
}

/// An error message on stderr and a non-zero exit, for mistakes a person can fix.
func fail(_ message: String) -> some Error {
    ValidationError(message)
}
