import ArgumentParser
import Foundation
import LatchkeyStoreSQLite

/// `latchkey backup PATH`: a consistent copy of a live SQLite store.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a live SQLite store to a new file while the server keeps serving.",
        discussion: """
            To restore, stop the server and put the copy in place as DATA_DIR/latchkey.sqlite (no \
            latchkey.sqlite-wal or -shm beside it). A PostgreSQL store is backed up with PostgreSQL's \
            own tools (pg_dump, or continuous archiving).
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The new file to write (it must not exist).") var path: String

    func run() async throws {
        guard try await store.settings().databaseURL == nil else {
            throw fail("latchkey backup copies SQLite stores; back PostgreSQL up with pg_dump or continuous archiving.")
        }
        guard let sqlite = try await store.openStore() as? SQLiteStore else { throw fail("This store cannot be backed up.") }
        let started = Date()
        do { try sqlite.backup(to: path) } catch { throw fail("Backup failed: \(error)") }
        let seconds = Date().timeIntervalSince(started)
        if output.json {
            try output.printJSON(["path": path, "seconds": (seconds * 1000).rounded() / 1000])
        } else {
            print("Backed up to \(path) in \(String(format: "%.2f", seconds)) s.")
            // The signing keys in the copy are sealed: without the key that seals them they cannot sign.
            print(
                "Keep the key-encryption key with it (DATA_DIR/key-encryption.key, or the one you give with "
                    + "LATCHKEY_KEY_ENCRYPTION_KEY), stored apart from the copy.")
        }
    }
}
