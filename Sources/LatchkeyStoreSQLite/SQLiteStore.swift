import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

/// The embedded default store: one SQLite file in WAL mode with `synchronous=FULL`, so a committed
/// transaction survives a crash or power loss before any response is sent (docs/design.md §6). One writer
/// at a time (GRDB's pool serializes writes); readers run beside it. Several processes (the server
/// and the CLI) may open the same file: a writer waits up to ten seconds for another. The WAL is
/// copied back into the database file beside the writer (``Checkpointer``), not inside a commit.
public final class SQLiteStore: Store {
    let pool: DatabasePool
    let groupCommit: GroupCommit
    let checkpointer: Checkpointer
    private let readers: ReadConnections

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// - Throws: ``StoreError/schemaTooNew(_:)`` when the file was written by a newer Latchkey.
    public init(path: String) throws {
        pool = try DatabasePool(path: path, configuration: Self.writerConfiguration())
        // GRDB's pool turns WAL on after `prepareDatabase` has run, and with it sets the writer to
        // `synchronous = NORMAL`, under which a commit does not sync the WAL and a power cut can
        // undo it. FULL again: a commit is synced before anyone is answered.
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        let migrator = SQLiteSchema.migrator
        if try pool.read({ try migrator.hasBeenSuperseded($0) }) {
            throw StoreError.schemaTooNew("\(path) has a schema newer than this version of Latchkey knows; upgrade Latchkey.")
        }
        try migrator.migrate(pool)
        checkpointer = try Checkpointer(path: path, busyTimeout: 10)
        groupCommit = GroupCommit(pool: pool, checkpointer: checkpointer)
        readers = ReadConnections(path: path, busyTimeout: 10)
    }

    /// The configuration of the writer's connection (and GRDB's, unused, readers).
    static func writerConfiguration() -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // 16 MB of page cache for the writer (SQLite's default is 2 MB): with millions of
            // tokens, the inner pages of the token indexes stay in memory, so an insert reads one
            // leaf page instead of a path of three or four.
            try db.execute(sql: "PRAGMA cache_size = -16384")
            // Checkpoints run beside the writer, in the ``Checkpointer``, not inside a commit.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        return configuration
    }

    /// Runs a read of **one statement** (see ``ReadConnections``) on the calling thread: GRDB's
    /// async API hops to a dispatch queue and back, and profiles showed those thread switches
    /// costing more than the SQL, which takes microseconds.
    /// `operation` names the store method, for ``StoreMetrics``.
    func read<T: Sendable>(operation: String = #function, _ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        do {
            return try StoreMetrics.measure(store: "sqlite", operation: operation) { try readers.read(body) }
        } catch { throw Self.mapped(error) }
    }

    /// Runs a write in the next group commit (see ``GroupCommit``): it returns once committed.
    /// Housekeeping passes `lane: .background`, to go after the requests' writes.
    func write<T: Sendable>(
        operation: String = #function, lane: GroupCommit.Lane = .request,
        _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        do {
            return try await StoreMetrics.measure(store: "sqlite", operation: operation) {
                try await groupCommit.write(lane: lane, body)
            }
        } catch { throw Self.mapped(error) }
    }

    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        if error.resultCode == .SQLITE_CONSTRAINT { return StoreError.conflict(error.message ?? "constraint failed") }
        return StoreError.unavailable(error.description)
    }
}

// MARK: - Backup

extension SQLiteStore {
    /// Writes a consistent copy of the live database to a new file at `path`, with SQLite's online
    /// backup (the server keeps serving meanwhile: the copy is of one committed state). The copy is
    /// written beside `path` and renamed into place, so `path` is either absent or complete. It holds
    /// what the store holds (secret and password hashes), so only its owner may read it (mode 0600).
    /// - Throws: when `path` exists, or the copy fails.
    public func backup(to path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError.conflict("\(path) exists; name a new file for the backup.")
        }
        let partial = path + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        // An empty file is an empty database: made first, so that it never exists with wider permissions.
        guard FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw StoreError.unavailable("Cannot create \(partial).")
        }
        do {
            let copy = try DatabaseQueue(path: partial)
            try pool.backup(to: copy)
            try copy.close()
            try FileManager.default.moveItem(atPath: partial, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw Self.mapped(error)
        }
    }
}
