import Foundation
import GRDB
import LatchkeyServer

/// Copies the SQLite store's WAL back into the database file from a connection of its own, so that
/// no request's write waits for it.
///
/// SQLite's default is to checkpoint inside the commit that takes the WAL past 1,000 pages: that
/// commit then writes those pages into the database file and syncs it before it returns, and every
/// write queued behind it in ``GroupCommit`` waits as long. The writer turns that off
/// (`PRAGMA wal_autocheckpoint = 0`); instead, ``committed()`` schedules a passive checkpoint
/// ``pause`` after a commit, on this connection and queue. A passive checkpoint takes no lock a
/// writer needs, so commits go on while it syncs the database file. When it has copied every page
/// before the writer's next transaction begins, that transaction starts the WAL over.
///
/// A writer that never pauses always begins before the copy is complete, and the WAL would grow
/// without end. So when a passive checkpoint leaves more than ``walLimit`` pages (16 MB) in the
/// WAL, the writer itself runs one between two batches (``writerCheckpointDue()``): it copies only
/// the pages written since this one, and the next batch starts the WAL over. Neither ever waits
/// for a reader: pages a reader still needs stay in the WAL until a later checkpoint.
final class Checkpointer: @unchecked Sendable {
    /// How long after a commit the checkpoint runs: long enough that a burst's commits share one.
    static let pause: DispatchTimeInterval = .milliseconds(50)
    /// The WAL's pages past which the writer checkpoints too (16 MB of 4 KB pages).
    static let walLimit = 4096

    private let walLimit: Int
    private let pause: DispatchTimeInterval?
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "latchkey.sqlite.checkpoint", qos: .utility)
    private let lock = NSLock()
    private var scheduled = false  // guarded by `lock`
    private var writerDue = false  // guarded by `lock`
    private var counts = Counts()  // guarded by `lock`

    /// What the checkpoints did, for tests.
    struct Counts: Sendable, Equatable {
        /// Passive checkpoints on the checkpointer's own connection.
        var passive = 0
        /// Checkpoints the writer ran between batches, the WAL being past its limit.
        var byWriter = 0
        /// Checkpoints that found another connection checkpointing (the CLI's, on the same file).
        var busy = 0
        /// Checkpoints that failed otherwise, an I/O error say (their pages stay in the WAL).
        var failed = 0
    }

    /// Opens its own connection to the database at `path`. `walLimit` and `pause` are for tests;
    /// with no pause, commits schedule nothing and checkpoints run only in ``settle()``.
    init(
        path: String, busyTimeout: TimeInterval, walLimit: Int = Checkpointer.walLimit,
        pause: DispatchTimeInterval? = Checkpointer.pause
    ) throws {
        self.walLimit = walLimit
        self.pause = pause
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// A transaction committed: checkpoint soon, unless a checkpoint is already scheduled.
    func committed() {
        guard let pause else { return }
        lock.lock()
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule { queue.asyncAfter(deadline: .now() + pause) { self.checkpoint() } }
    }

    /// Runs a checkpoint now and returns when it is done, for tests.
    func settle() {
        queue.sync { checkpoint() }
    }

    var done: Counts {
        lock.lock()
        defer { lock.unlock() }
        return counts
    }

    /// Whether the writer should checkpoint before its next batch; true once per passive
    /// checkpoint that left the WAL past its limit.
    func writerCheckpointDue() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard writerDue else { return false }
        writerDue = false
        return true
    }

    /// The writer's checkpoint, run by ``GroupCommit`` on the writer's connection between batches.
    func checkpointByWriter(_ db: Database) {
        let outcome = Result { try StoreMetrics.measureCheckpoint(mode: "writer") { try db.checkpoint(.passive) } }
        lock.lock()
        defer { lock.unlock() }
        switch outcome {
        case .success: counts.byWriter += 1
        case .failure(let error): countFailure(error, mode: "writer")
        }
    }

    private func checkpoint() {
        lock.lock()
        scheduled = false
        lock.unlock()
        let outcome = Result {
            try connection.writeWithoutTransaction { db in
                try StoreMetrics.measureCheckpoint(mode: "passive") { try db.checkpoint(.passive) }
            }
        }
        if case .success(let wal) = outcome { StoreMetrics.recordWALPages(wal.walFrameCount) }
        // A failed checkpoint loses nothing: its pages stay in the WAL, and the next commit
        // schedules another.
        lock.lock()
        defer { lock.unlock() }
        switch outcome {
        case .success(let wal):
            counts.passive += 1
            if wal.walFrameCount > walLimit { writerDue = true }
        case .failure(let error):
            countFailure(error, mode: "passive")
        }
    }

    /// Counts a checkpoint that failed, for tests and as the counter
    /// `latchkey_sqlite_checkpoint_failures_total`. Called with `lock` held.
    private func countFailure(_ error: any Error, mode: String) {
        // SQLITE_BUSY: another connection (the CLI's checkpointer) was checkpointing, or
        // recovering the WAL; the next checkpoint copies what this one would have.
        let busy = (error as? DatabaseError)?.resultCode == .SQLITE_BUSY
        if busy { counts.busy += 1 } else { counts.failed += 1 }
        StoreMetrics.recordCheckpointFailure(mode: mode, busy: busy)
    }
}
