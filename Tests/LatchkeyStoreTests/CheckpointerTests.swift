import Foundation
import GRDB
import Testing

@testable import LatchkeyStoreSQLite

/// The SQLite store's WAL is copied back into the database file beside the writer, not inside a
/// commit, and stays bounded even when the writer never pauses.
@Suite("WAL checkpoints beside the writer")
struct CheckpointerTests {
    /// A write of `pages` rows of one page each, into a table of its own.
    static func filler(pages: Int) -> @Sendable (Database) throws -> Void {
        { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS filler(body BLOB)")
            for _ in 0..<pages {
                try db.execute(sql: "INSERT INTO filler(body) VALUES (randomblob(4000))")
            }
        }
    }

    /// The WAL's frames, and those already copied into the database file, as another connection
    /// sees them (a passive checkpoint with nothing left to copy changes nothing).
    static func wal(_ path: String) throws -> (frames: Int, copied: Int) {
        let probe = try DatabaseQueue(path: path)
        defer { try? probe.close() }
        let counts = try probe.writeWithoutTransaction { try $0.checkpoint(.passive) }
        return (counts.walFrameCount, counts.checkpointedFrameCount)
    }

    static func size(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    @Test("Commits do not checkpoint; the checkpointer copies the whole WAL, and the next write starts it over")
    func checkpointsBesideTheWriter() async throws {
        try await GroupCommitTests.inFolder { folder in
            let path = folder.appendingPathComponent("store.sqlite").path
            let pool = try DatabasePool(path: path, configuration: SQLiteStore.writerConfiguration())
            let checkpointer = try Checkpointer(path: path, busyTimeout: 10)
            // No checkpointer hears of these commits, so the WAL holds all the writer left in it:
            // more pages than SQLite's own checkpoint lets it hold (1,000).
            let commit = GroupCommit(pool: pool)
            for _ in 0..<30 { try await commit.write(Self.filler(pages: 50)) }
            #expect(try Self.size(path + "-wal") > 1300 * 4096, "a commit checkpointed: the WAL started over")
            #expect(try Self.size(path) < 1_000_000, "a commit copied pages into the database file")

            checkpointer.settle()
            #expect(try Self.size(path) > 1500 * 4096, "the checkpointer did not copy the WAL")
            #expect(checkpointer.done == .init(passive: 1, byWriter: 0, failed: 0), "\(checkpointer.done)")

            // The WAL was copied whole, so the next write starts it over.
            try await commit.write(Self.filler(pages: 1))
            let wal = try Self.wal(path)
            #expect(wal.frames < 20, "the WAL did not start over: \(wal)")
        }
    }

    @Test("The store's writer does not checkpoint, and its commits call the checkpointer", .timeLimit(.minutes(1)))
    func storeUsesTheCheckpointer() async throws {
        try await GroupCommitTests.inFolder { folder in
            let store = try SQLiteStore(path: folder.appendingPathComponent("latchkey.sqlite").path)
            let autocheckpoint = try await store.pool.write { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") }
            #expect(autocheckpoint == 0, "a commit would checkpoint every \(autocheckpoint ?? -1) pages")
            try await store.write(Self.filler(pages: 1))
            while store.checkpointer.done.passive == 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    @Test("A WAL past its limit is started over even when a transaction was open during the checkpoint")
    func writerCheckpointsPastTheLimit() async throws {
        let limit = 200
        try await GroupCommitTests.inFolder { folder in
            let path = folder.appendingPathComponent("store.sqlite").path
            let pool = try DatabasePool(path: path, configuration: SQLiteStore.writerConfiguration())
            // Passive checkpoints run only when the test says so (`settle()`), never after a commit.
            let checkpointer = try Checkpointer(path: path, busyTimeout: 10, walLimit: limit, pause: nil)
            try await GroupCommit(pool: pool).write(Self.filler(pages: 2 * limit))
            let commit = GroupCommit(pool: pool, checkpointer: checkpointer)

            // The writer is inside a transaction with pages of its own while the checkpoint runs:
            // what a writer that never pauses looks like to the checkpoint. It copies everything
            // committed; the open transaction then commits more, so the WAL cannot start over.
            let (started, startedContinuation) = AsyncStream<Void>.makeStream()
            let release = DispatchSemaphore(value: 0)
            let held = Task {
                try await commit.write { db in
                    try Self.filler(pages: 10)(db)
                    startedContinuation.yield()
                    release.wait()
                }
            }
            var iterator = started.makeAsyncIterator()
            _ = await iterator.next()
            checkpointer.settle()
            release.signal()
            try await held.value

            // The writer ran its own checkpoint after that batch, so the next write starts the WAL over.
            try await commit.write(Self.filler(pages: 1))
            let wal = try Self.wal(path)
            #expect(wal.frames < 20, "the WAL did not start over: \(wal); \(checkpointer.done)")
            #expect(checkpointer.done == .init(passive: 1, byWriter: 1, failed: 0), "\(checkpointer.done)")
        }
    }

    @Test("A checkpoint that finds another one running is counted as busy, and loses nothing", .timeLimit(.minutes(1)))
    func busyCheckpointIsCounted() async throws {
        try await GroupCommitTests.inFolder { folder in
            let path = folder.appendingPathComponent("store.sqlite").path
            let pool = try DatabasePool(path: path, configuration: SQLiteStore.writerConfiguration())
            try await GroupCommit(pool: pool).write(Self.filler(pages: 50))
            let checkpointer = try Checkpointer(path: path, busyTimeout: 10, pause: nil)

            // Another process runs a full checkpoint while a write is open: it holds the
            // checkpoint lock while it waits for the writer, so ours finds it busy.
            let (writing, writingContinuation) = AsyncStream<Void>.makeStream()
            let release = DispatchSemaphore(value: 0)
            let writer = try DatabaseQueue(path: path)
            DispatchQueue.global().async {
                try? writer.inTransaction(.immediate) { db in
                    try Self.filler(pages: 1)(db)
                    writingContinuation.yield()
                    release.wait()
                    return .commit
                }
            }
            var iterator = writing.makeAsyncIterator()
            _ = await iterator.next()
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let other = try DatabaseQueue(path: path, configuration: configuration)
            let (otherDone, otherContinuation) = AsyncStream<Bool>.makeStream()
            DispatchQueue.global().async {
                // Tried again whenever this test's own checkpoint holds the lock.
                var copied = false
                for _ in 0..<10_000 where !copied {
                    copied = (try? other.writeWithoutTransaction { try $0.checkpoint(.full) }) != nil
                }
                otherContinuation.yield(copied)
            }
            for _ in 0..<2_000 where checkpointer.done.busy == 0 {
                checkpointer.settle()
                try await Task.sleep(for: .milliseconds(2))
            }
            #expect(checkpointer.done.busy == 1, "\(checkpointer.done)")
            release.signal()
            var done = otherDone.makeAsyncIterator()
            #expect(await done.next() == true, "the other connection's checkpoint did not run")

            // Nothing was lost: the pages stayed in the WAL and are in the database file now.
            checkpointer.settle()
            #expect(checkpointer.done.failed == 0, "\(checkpointer.done)")
            let wal = try Self.wal(path)
            #expect(wal.frames == wal.copied, "pages left in the WAL: \(wal)")
            let rows = try await pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM filler") }
            #expect(rows == 51)
        }
    }
}
