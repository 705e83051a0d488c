import LatchkeyServer
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small pool of dedicated threads for password hashing, with a bounded queue.
///
/// bcrypt at cost 11 takes about 0.1 s of CPU. Run on Swift's cooperative pool (one thread per
/// core), a few concurrent sign-ins would hold every thread and stall every token request behind
/// them. Here they run on threads of their own, at a lower scheduling priority (nice 10, on
/// Linux) so request threads win the CPU, and at most `threads + queueLimit` hashes are admitted:
/// beyond that ``run(_:)`` throws ``PasswordHashingBusy`` at once, and the sign-in page answers 503
/// with `Retry-After`, instead of building an unbounded backlog.
public final class PasswordWorkers: Sendable {
    private let pool: NIOThreadPool
    private let admitted = Atomic<Int>(0)
    /// How many hashes may run at once (one per thread).
    public let threads: Int
    /// How many more may wait for a thread.
    public let queueLimit: Int

    /// - Parameters:
    ///   - threads: threads to hash on; by default one per core, so sign-ins can use every core
    ///     when nothing else needs it.
    ///   - queueLimit: hashes that may wait beyond those running.
    public init(threads: Int = System.coreCount, queueLimit: Int = 32) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit)
        pool = NIOThreadPool(numberOfThreads: self.threads)
        pool.start()
    }

    deinit {
        // Let the threads end once their work is done (the shared pool lives as long as the process).
        pool.shutdownGracefully { _ in }
    }

    /// The process's pool, started on first use.
    public static let shared = PasswordWorkers()

    /// Runs `work` on one of the pool's threads.
    /// - Throws: ``PasswordHashingBusy`` when `threads + queueLimit` hashes are already admitted.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let limit = threads + queueLimit
        let (_, admittedNow) = admitted.add(1, ordering: .relaxed)
        defer { admitted.subtract(1, ordering: .relaxed) }
        guard admittedNow <= limit else {
            // The queue drains by `threads` hashes every 0.1 s or so: in a second most of it is gone.
            throw PasswordHashingBusy(retryAfter: 1)
        }
        return try await pool.runIfActive {
            Self.lowerPriority()
            return try work()
        }
    }

    /// Gives the calling thread nice 10, so request threads run first when both want the CPU.
    /// (A syscall of about a microsecond before 0.1 s of hashing: cheaper than remembering which
    /// threads had it.)
    private static func lowerPriority() {
        #if os(Linux)
            // On Linux the nice value belongs to the thread, and `who` 0 names the calling thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
    }
}
