import LatchkeyServer
import Logging
import ServiceLifecycle

/// Deletes expired sessions, pending requests, codes and tokens every few minutes, in small
/// batches so requests never wait long for the store's writer.
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
            do {
                let purged = try await server.purgeExpired()
                if purged > 0 { server.logger.info("purged expired rows", metadata: ["count": "\(purged)"]) }
            } catch {
                server.logger.warning("purge failed; will retry", metadata: ["error": "\(error)"])
            }
        }
    }
}
