import Dispatch
import LatchkeyServer
import Logging
import ServiceLifecycle

/// Deletes expired sessions, pending requests, codes and tokens every few minutes, in small
/// batches so requests never wait long for the store's writer. Each run is timed
/// (``StoreMetrics/recordPurge(nanoseconds:rows:)``) and, when it deleted anything, logged.
struct PurgeService: Service {
    let server: AuthorizationServer
    let interval: Duration

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return  // shutting down
            }
            let start = DispatchTime.now().uptimeNanoseconds
            do {
                let purged = try await server.purgeExpired()
                let took = Int64(clamping: DispatchTime.now().uptimeNanoseconds &- start)
                StoreMetrics.recordPurge(nanoseconds: took, rows: purged)
                if purged > 0 {
                    server.logger.info(
                        "purged expired rows", metadata: ["count": "\(purged)", "duration_ms": "\(took / 1_000_000)"])
                }
            } catch {
                server.logger.warning("purge failed; will retry", metadata: ["error": "\(error)"])
            }
        }
    }
}
