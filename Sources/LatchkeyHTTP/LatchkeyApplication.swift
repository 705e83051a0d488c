import Hummingbird
import LatchkeyServer
import Logging
import ServiceLifecycle

/// The HTTP server around an ``AuthorizationServer``: Hummingbird 2 with graceful shutdown on
/// SIGINT and SIGTERM when run with `runService()`.
public enum LatchkeyApplication {
    /// - Parameters:
    ///   - onServerRunning: called with the bound port once the server listens (port 0 picks one).
    ///   - purgeInterval: how often expired rows are deleted in the background.
    ///   - services: more services for the group, shut down after the HTTP server and the purge
    ///     (for example the store's connection pool).
    public static func make(
        server: AuthorizationServer, host: String, port: Int, purgeInterval: Duration = .seconds(300),
        services: [any Service] = [],
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: LatchkeyRoutes.router(for: server),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            services: services + [PurgeService(server: server, interval: purgeInterval), AuditService(server: server)],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: server.logger)
    }
}
