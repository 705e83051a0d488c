import Foundation
import GRDB
import LatchkeyServer

/// Group commit for the SQLite store's writes.
///
/// Writes run one after another on one dispatch queue. Those that arrive while a transaction is
/// committing wait and then share the next one: one WAL append and one sync for the whole batch.
/// A page the batch touches several times (the end of the tokens table and of its indexes) is
/// written once, not once per write. Each write runs in its own savepoint, so a write that fails
/// is rolled back alone and the others still commit. Every caller is answered only after the
/// transaction holding its write has committed, or with that transaction's error if it failed, so
/// nothing is acknowledged before it is durable.
///
/// After each commit it tells the ``Checkpointer``, which copies the WAL into the database file
/// beside it; between two batches it runs the checkpointer's rare writer checkpoint.
///
/// Housekeeping (the purge's batches) goes in the ``Lane/background`` lane: each such write is a
/// transaction of its own, taken when no request's write is waiting, or after ``backgroundAfter``
/// batches of requests' writes have gone ahead of it. A request's write then waits for at most
/// one batch of the purge, and never shares a transaction with one. A background transaction
/// commits without syncing the WAL (`PRAGMA synchronous = NORMAL`): the next request's commit or
/// checkpoint syncs its pages, and a crash before that only undoes a deletion the next purge does
/// again. So the writer is not held for a sync per purge batch. The next request's write sets
/// `FULL` again before its transaction begins, and fails if it cannot: no request commits unsynced.
final class GroupCommit: @unchecked Sendable {
    /// The most writes one transaction takes, so that a burst cannot hold the writer for long.
    static let batchLimit = 64
    /// How many batches of requests' writes may go ahead of a waiting background write, so that
    /// the purge keeps up even when the writer is never idle.
    static let backgroundAfter = 8

    enum Lane: Sendable {
        /// A request's write: batched with the others waiting.
        case request
        /// Housekeeping: alone in its transaction, after the requests' writes, committed without
        /// a sync of its own.
        case background
    }

    private let pool: DatabasePool
    private let checkpointer: Checkpointer?
    private let queue = DispatchQueue(label: "latchkey.sqlite.group-commit")
    private let lock = NSLock()
    private var pending: [Job] = []  // guarded by `lock`
    private var background: [Job] = []  // guarded by `lock`
    private var passedOver = 0  // guarded by `lock`: request batches taken while a background write waited
    private var draining = false  // guarded by `lock`: a drain() is scheduled or running
    /// Whether this class set the writer to `synchronous = FULL` (false until the first request's
    /// write has, whatever the pool's owner set); read and set only by `commit`, on `queue`.
    private var writerSyncs = false

    /// `checkpointer` hears of every transaction that committed (none in tests of the batching alone).
    init(pool: DatabasePool, checkpointer: Checkpointer? = nil) {
        self.pool = pool
        self.checkpointer = checkpointer
    }

    /// Runs `body` in the next batch's transaction and returns its result once that transaction
    /// has committed. Throws what `body` threw (its savepoint rolled back), or the batch's error.
    func write<T: Sendable>(lane: Lane = .request, _ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = Outcome<T>()
            enqueue(
                lane: lane,
                Job(
                    run: { db in
                        outcome.result = Result {
                            var value: T?
                            try db.inSavepoint {
                                value = try body(db)
                                return .commit
                            }
                            return value!
                        }
                    },
                    finish: { batchError in
                        if let batchError {
                            continuation.resume(throwing: batchError)
                        } else {
                            continuation.resume(
                                with: outcome.result ?? .failure(StoreError.unavailable("the write did not run")))
                        }
                    }))
        }
    }

    private func enqueue(lane: Lane, _ job: Job) {
        lock.lock()
        switch lane {
        case .request: pending.append(job)
        case .background: background.append(job)
        }
        let start = !draining
        draining = true
        lock.unlock()
        if start { queue.async { self.drain() } }
    }

    /// Commits batches until no write is waiting.
    private func drain() {
        while true {
            lock.lock()
            let batch: [Job]
            let lane: Lane
            if !background.isEmpty && (pending.isEmpty || passedOver >= Self.backgroundAfter) {
                batch = [background.removeFirst()]
                lane = .background
                passedOver = 0
            } else {
                batch = Array(pending.prefix(Self.batchLimit))
                lane = .request
                pending.removeFirst(batch.count)
                if !background.isEmpty { passedOver += 1 }
            }
            if batch.isEmpty { draining = false }
            lock.unlock()
            if batch.isEmpty { return }
            commit(batch, syncs: lane == .request)
        }
    }

    /// `syncs`: whether the commit syncs the WAL before it returns (requests' writes), or leaves
    /// that to the next commit or checkpoint (housekeeping, which a crash may undo).
    private func commit(_ batch: [Job], syncs: Bool) {
        StoreMetrics.recordGroupCommit(batchSize: batch.count)
        var batchError: (any Error)?
        do {
            try pool.writeWithoutTransaction { db in
                if syncs != writerSyncs {
                    try db.execute(sql: "PRAGMA synchronous = \(syncs ? "FULL" : "NORMAL")")
                    writerSyncs = syncs
                }
                do {
                    try db.beginTransaction(.immediate)
                    for job in batch {
                        job.run(db)
                        // Some errors (a full disk, an I/O error) make SQLite roll back the whole
                        // transaction: then no write of this batch is stored.
                        guard db.isInsideTransaction else {
                            throw StoreError.unavailable("SQLite rolled back the shared transaction")
                        }
                    }
                    try db.commit()
                } catch {
                    if db.isInsideTransaction { try? db.rollback() }
                    throw error
                }
            }
        } catch {
            batchError = error
        }
        if batchError == nil { checkpointer?.committed() }
        for job in batch { job.finish(batchError) }
        if let checkpointer, checkpointer.writerCheckpointDue() {
            pool.writeWithoutTransaction { checkpointer.checkpointByWriter($0) }
        }
    }

    /// The writes waiting, for tests: requests' and background ones.
    var waiting: (requests: Int, background: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (pending.count, background.count)
    }

    private struct Job: Sendable {
        /// Runs the write in its savepoint and keeps its outcome.
        let run: @Sendable (Database) -> Void
        /// Answers the caller: the batch's error if it did not commit, else the kept outcome.
        let finish: @Sendable ((any Error)?) -> Void
    }

    /// One write's result, set and read only on the group-commit queue.
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }
}
