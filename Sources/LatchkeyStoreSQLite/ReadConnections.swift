import Foundation
import GRDB

/// The store's read-only connections, each used by one caller at a time on the caller's own
/// thread. GRDB's `DatabasePool` reader pool costs more than the reads themselves (a barrier
/// queue, a semaphore and a key path per checkout showed in profiles); a lock around a free list
/// is all this needs. A connection is opened when every one is busy, so there are as many as
/// the most reads that ever ran at once (the threads that run requests: about one per core).
final class ReadConnections: @unchecked Sendable {
    private let path: String
    private let configuration: Configuration
    private let lock = NSLock()
    private var idle: [DatabaseQueue] = []  // guarded by `lock`

    init(path: String, busyTimeout: TimeInterval) {
        self.path = path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(busyTimeout)
        self.configuration = configuration
    }

    /// Runs `body` on an idle connection. Its statements run without BEGIN/COMMIT: a single
    /// statement is its own read transaction in SQLite, and every read of the store is one statement.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        lock.lock()
        let reused = idle.popLast()
        lock.unlock()
        let connection = try reused ?? DatabaseQueue(path: path, configuration: configuration)
        defer {
            lock.lock()
            idle.append(connection)
            lock.unlock()
        }
        return try connection.unsafeRead(body)
    }
}
