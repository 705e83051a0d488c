import Foundation
import GRDB
import LatchkeyTestSupport
import Synchronization
import Testing

@testable import LatchkeyStoreSQLite

/// The SQLite store's group commit: the purge's background lane waits behind the requests' writes,
/// alone in its transaction, is not starved by them, and alone skips the sync at commit.
@Suite("Group commit lanes")
struct GroupCommitTests {
    /// The order in which writes ran, each with the number of the transaction it ran in.
    final class Log: Sendable {
        private struct State {
            var entries: [(label: String, transaction: Int)] = []
            var transaction = 0
            var open = false
        }
        private let state = Mutex(State())

        /// A write that logs `label` with its transaction's number. The first write of a
        /// transaction opens the next number, and the transaction's end closes it.
        func write(_ label: String) -> @Sendable (Database) throws -> Void {
            { db in
                let opens = self.state.withLock { state in
                    defer { state.open = true }
                    if !state.open { state.transaction += 1 }
                    state.entries.append((label, state.transaction))
                    return !state.open
                }
                if opens {
                    let close: @Sendable (Database) -> Void = { _ in self.state.withLock { $0.open = false } }
                    db.afterNextTransaction(onCommit: close, onRollback: close)
                }
            }
        }

        var entries: [(label: String, transaction: Int)] { state.withLock { $0.entries } }
    }

    /// Runs `body` with a folder of its own for a test's database (``Scratch``).
    static func inFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
        try await body(try Scratch.folder("group-commit"))
    }

    /// Runs `body` while `commit`'s writer is held inside a transaction, so that the writes `body`
    /// starts queue up; lets the writer go when `body` ends, even by throwing.
    static func whileHeld<T>(_ commit: GroupCommit, _ body: () async throws -> T) async throws -> T {
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await commit.write { _ in
                startedContinuation.yield()
                release.wait()
            }
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        let result: T
        do { result = try await body() } catch {
            release.signal()
            throw error
        }
        release.signal()
        try await holder.value
        return result
    }

    static func waitUntil(_ commit: GroupCommit, requests: Int, background: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while commit.waiting != (requests, background) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the writes were not queued: \(commit.waiting)")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test(
        "A background write waits for the requests' writes queued after it, alone in its transaction",
        .timeLimit(.minutes(1)))
    func backgroundGoesAfterRequests() async throws {
        let entries = try await Self.inFolder { folder in
            let commit = GroupCommit(pool: try DatabasePool(path: folder.appendingPathComponent("store.sqlite").path))
            let log = Log()
            let (purge, requests) = try await Self.whileHeld(commit) {
                let purge = Task { try await commit.write(lane: .background, log.write("purge")) }
                try await Self.waitUntil(commit, requests: 0, background: 1)
                let requests = (0..<10).map { index in Task { try await commit.write(log.write("request\(index)")) } }
                try await Self.waitUntil(commit, requests: 10, background: 1)
                return (purge, requests)
            }
            try await purge.value
            for request in requests { try await request.value }
            return log.entries
        }
        #expect(entries.last?.label == "purge", "\(entries.map(\.label))")
        let purgeTransaction = try #require(entries.last?.transaction)
        #expect(entries.filter { $0.transaction == purgeTransaction }.count == 1, "the purge shared its transaction")
        #expect(Set(entries.dropLast().map(\.transaction)).count == 1, "the ten requests' writes were one batch")
    }

    @Test("Requests' writes that never stop still let a background write through", .timeLimit(.minutes(1)))
    func backgroundIsNotStarved() async throws {
        let labels = try await Self.inFolder { folder in
            let commit = GroupCommit(pool: try DatabasePool(path: folder.appendingPathComponent("store.sqlite").path))
            let log = Log()
            let count = GroupCommit.batchLimit * (GroupCommit.backgroundAfter + 4)
            let (purge, requests) = try await Self.whileHeld(commit) {
                let purge = Task { try await commit.write(lane: .background, log.write("purge")) }
                try await Self.waitUntil(commit, requests: 0, background: 1)
                let requests = (0..<count).map { index in Task { try await commit.write(log.write("request\(index)")) } }
                try await Self.waitUntil(commit, requests: count, background: 1)
                return (purge, requests)
            }
            try await purge.value
            for request in requests { try await request.value }
            return log.entries.map(\.label)
        }
        let position = try #require(labels.firstIndex(of: "purge"))
        #expect(position == GroupCommit.batchLimit * GroupCommit.backgroundAfter, "the purge ran \(position)th")
    }

    @Test("The store's writer syncs the WAL at every commit (synchronous = FULL), where GRDB's pool would leave NORMAL")
    func writerSyncsEveryCommit() async throws {
        let level = try await Self.inFolder { folder in
            let store = try SQLiteStore(path: folder.appendingPathComponent("latchkey.sqlite").path)
            return try await store.groupCommit.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        }
        #expect(level == 2, "a commit that does not sync can be undone by a power cut after it was answered")
    }

    @Test(
        "Only a background write commits without syncing the WAL: requests' writes before and after it sync theirs",
        .timeLimit(.minutes(1)))
    func onlyBackgroundSkipsTheSync() async throws {
        let levels = try await Self.inFolder { folder in
            let store = try SQLiteStore(path: folder.appendingPathComponent("latchkey.sqlite").path)
            let level: @Sendable (Database) throws -> Int = { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
            let before = try await store.groupCommit.write(level)
            let background = try await store.groupCommit.write(lane: .background, level)
            let backgroundAgain = try await store.groupCommit.write(lane: .background, level)
            let after = try await store.groupCommit.write(level)
            return [before, background, backgroundAgain, after]
        }
        // SQLite's levels: 2 is FULL (a sync at every commit), 1 is NORMAL (at checkpoints only).
        #expect(levels == [2, 1, 1, 2])
    }

    @Test("The SQLite store's purge writes in the background lane", .timeLimit(.minutes(1)))
    func storePurgeIsBackground() async throws {
        try await Self.inFolder { folder in
            let store = try SQLiteStore(path: folder.appendingPathComponent("latchkey.sqlite").path)
            let purge = try await Self.whileHeld(store.groupCommit) {
                let purge = Task { try await store.purgeExpired(at: Date(), retention: 600, activityRetention: 86_400) }
                try await Self.waitUntil(store.groupCommit, requests: 0, background: 1)
                return purge
            }
            #expect(try await purge.value == 0)
        }
    }
}
