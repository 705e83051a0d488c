import ArgumentParser
import Foundation
import LatchkeyPasswords
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyStoreSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the data lives, for the admin commands, which may run beside `serve`: the same settings
/// as `serve`'s, from the same sources (flags, `LATCHKEY_*` variables, the configuration file).
struct StoreOptions: ParsableArguments {
    @Option(help: "Folder holding the SQLite database (created if missing). Also LATCHKEY_DATA_DIR.")
    var dataDir: String?

    @Option(
        name: .customLong("database-url"),
        help:
            "PostgreSQL instead of SQLite, for several instances: postgres://user:password@host:5432/db[?sslmode=require]. Also LATCHKEY_DATABASE_URL."
    )
    var databaseURLOption: String?

    @Option(
        help:
            "File holding the PostgreSQL password, for a database-url written without one (or LATCHKEY_DATABASE_PASSWORD). Also LATCHKEY_DATABASE_PASSWORD_FILE."
    )
    var databasePasswordFile: String?

    @Option(
        name: .customLong("key-encryption-key-file"),
        help: ArgumentHelp(
            "File holding the key that seals the signing keys in the store (32 bytes, base64). Also LATCHKEY_KEY_ENCRYPTION_KEY. "
                + "Default with SQLite: DATA_DIR/key-encryption.key, made on first use; PostgreSQL needs one given."))
    var keyEncryptionKeyFile: String?

    @Option(help: "The configuration file serve reads (JSON), for its store settings. Also LATCHKEY_CONFIG.")
    var config: String?

    /// The store settings from these options, the environment and the configuration file.
    func settings() async throws -> StoreSettings {
        do {
            return try StoreSettings(try await allSettings())
        } catch let error as SettingError {
            throw fail(error.description)
        }
    }

    /// Every setting, from these options and `more` (a command's own flags for other settings),
    /// the environment and the configuration file.
    func allSettings(adding more: [(String, String?)] = []) async throws -> Settings {
        var arguments: [String] = []
        for (name, value) in [
            ("data-dir", dataDir), ("database-url", databaseURLOption), ("database-password-file", databasePasswordFile),
            ("key-encryption-key-file", keyEncryptionKeyFile), ("config", config),
        ] + more {
            if let value { arguments.append("--\(name)=\(value)") }
        }
        return try await Settings(arguments: arguments)
    }

    func openStore() async throws -> any Store { try await settings().openStore() }
    func keyEncryptionKey() async throws -> KeyEncryptionKey { try await settings().keyEncryptionKey() }

    func administration() async throws -> Administration {
        bootstrapLogging()
        let settings = try await settings()
        var administration = Administration(
            store: try await settings.openStore(), passwordHasher: BcryptPasswordHasher(),
            passwordPolicy: PasswordPolicy(minimumLength: settings.passwordMinimumLength))
        administration.acceptsLocalhostRedirects = settings.acceptsLocalhostRedirects
        return administration
    }
}

/// The store settings: SQLite in `data-dir`, or PostgreSQL at `database-url`, and the key that
/// seals the signing keys; and `password-min-length`, which the admin commands apply as `serve` does.
struct StoreSettings: Sendable {
    var passwordMinimumLength: Int
    /// `localhost-redirect-uris`, which the admin commands apply as `serve` does.
    var acceptsLocalhostRedirects: Bool
    var dataDir: String
    var databaseURL: String?
    var keyEncryptionKeyFile: String?
    var keyEncryptionKeyText: String?

    init(_ settings: Settings) throws {
        passwordMinimumLength = try settings.count("password-min-length")
        acceptsLocalhostRedirects = try settings.choice("localhost-redirect-uris") == "accept"
        dataDir = try settings.text("data-dir") ?? "latchkey-data"
        databaseURL = try Self.databaseURL(
            try settings.text("database-url"), password: try settings.text("database-password"),
            passwordFile: try settings.text("database-password-file"))
        keyEncryptionKeyFile = try settings.text("key-encryption-key-file")
        keyEncryptionKeyText = try settings.text("key-encryption-key")
    }

    /// `url` with the password put in from `password` (`LATCHKEY_DATABASE_PASSWORD`) or the first
    /// line of `passwordFile`, so that the password need not be a flag, which any user can read
    /// in the process list (docs/threat-model.md OP4). A URL that holds a password already keeps it.
    static func databaseURL(_ url: String?, password: String?, passwordFile: String?) throws -> String? {
        guard let url else { return nil }
        var secret = password
        if secret == nil, let passwordFile {
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw fail("database-password-file \(passwordFile) cannot be read.")
            }
            secret = String(text.prefix { $0 != "\n" && $0 != "\r" })
        }
        guard let secret, var components = URLComponents(string: url) else { return url }
        guard components.password == nil else {
            throw fail("database-url holds a password already: give it there or in database-password(-file), not both.")
        }
        components.password = secret
        return components.string ?? url
    }

    /// The key-encryption key: `key-encryption-key` (`LATCHKEY_KEY_ENCRYPTION_KEY`), else
    /// `key-encryption-key-file`, else (SQLite only) `key-encryption.key` in the data folder,
    /// created mode 0600 when missing. Several instances on one PostgreSQL must share it, so there
    /// it is never made up.
    func keyEncryptionKey() throws -> KeyEncryptionKey {
        if let text = keyEncryptionKeyText {
            guard let key = KeyEncryptionKey(text: text) else {
                throw fail("LATCHKEY_KEY_ENCRYPTION_KEY must be 32 bytes in base64 (make one with: openssl rand -base64 32).")
            }
            return key
        }
        if let keyEncryptionKeyFile {
            guard let text = try? String(contentsOfFile: keyEncryptionKeyFile, encoding: .utf8),
                let key = KeyEncryptionKey(text: text)
            else {
                throw fail(
                    "key-encryption-key-file \(keyEncryptionKeyFile) must hold 32 bytes in base64 (openssl rand -base64 32).")
            }
            return key
        }
        guard databaseURL == nil else {
            throw fail(
                "With PostgreSQL every instance must seal and open the signing keys with the same key: set "
                    + "LATCHKEY_KEY_ENCRYPTION_KEY or key-encryption-key-file (make one with: openssl rand -base64 32).")
        }
        let path = (dataDir as NSString).appendingPathComponent("key-encryption.key")
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            guard let key = KeyEncryptionKey(text: text) else { throw fail("\(path) does not hold 32 bytes in base64.") }
            return key
        }
        try FileManager.default.createDirectory(
            atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Created exclusively (O_EXCL), so of two processes starting together one writes it and
        // both read the same key back.
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        if descriptor >= 0 {
            let line = Array((KeyEncryptionKey.generate().text + "\n").utf8)
            let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            guard written == line.count else { throw fail("Cannot write \(path).") }
        }
        for _ in 0..<50 {
            if let text = try? String(contentsOfFile: path, encoding: .utf8), let key = KeyEncryptionKey(text: text) {
                return key
            }
            usleep(20_000)
        }
        throw fail("\(path) does not hold 32 bytes in base64.")
    }

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
