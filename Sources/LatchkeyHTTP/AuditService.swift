import LatchkeyServer
import Logging
import ServiceLifecycle

/// Stores the server's waiting audit events every second, and once more on shutdown.
struct AuditService: Service {
    let server: AuthorizationServer
    var interval: Duration = .seconds(1)

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break  // shutting down: one last flush below
            }
            await flush()
        }
        await flush()
    }

    private func flush() async {
        do {
            try await server.flushAuditEvents()
        } catch {
            server.logger.warning("audit events not stored yet; will retry", metadata: ["error": "\(error)"])
        }
    }
}
