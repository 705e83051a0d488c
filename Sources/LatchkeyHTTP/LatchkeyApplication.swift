import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LatchkeyServer
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// How the HTTP server serves, beyond the authorization server's own configuration.
public struct HTTPServingOptions: Sendable {
    /// Count and time requests for ``MetricsExporter``.
    public var recordsMetrics = false
    /// One log line per request (see ``RequestMiddleware``).
    public var accessLog = false
    /// https on the port instead of http.
    public var tls: TLSConfiguration?
    /// On SIGTERM or SIGINT: how long requests in flight may take before the server closes anyway.
    public var shutdownTimeout: Duration = .seconds(30)
    /// How long a connection may go without completing a request part (a head, a piece of body,
    /// its end) before it is closed: an idle keep-alive connection, a request head or body sent too
    /// slowly, a TLS handshake that never finishes (docs/threat-model.md RV4).
    public var idleTimeout: Duration = .seconds(30)
    /// The most HTTP connections open at once; more are closed as soon as they are accepted.
    public var maximumConnections = Self.defaultMaximumConnections

    /// The process's open-file limit less a reserve for the store, the logs and the listener (so
    /// `accept` never fails for want of descriptors), at most 16,384.
    public static var defaultMaximumConnections: Int { ConcurrencySlots.defaultMaximum() }

    public init() {}

    /// A server TLS configuration from PEM files: the certificate chain (leaf first) and its key.
    public static func tls(certificateFile: String, keyFile: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        // Made once here, so that a key that does not belong to the certificate stops start-up
        // before anything binds, not the first handshake.
        _ = try NIOSSLContext(configuration: configuration)
        return configuration
    }
}

/// The HTTP server around an ``AuthorizationServer``: Hummingbird 2, run by ``run(_:options:logger:)``
/// with graceful shutdown on SIGINT and SIGTERM.
public enum LatchkeyApplication {
    /// - Parameters:
    ///   - onServerRunning: called with the bound port once the server listens (port 0 picks one).
    ///   - purgeInterval: how often expired rows are deleted in the background.
    ///   - services: more services for the group, shut down after the HTTP server and the purge
    ///     (for example the store's connection pool).
    public static func make(
        server: AuthorizationServer, host: String, port: Int, purgeInterval: Duration = .seconds(300),
        services: [any Service] = [], options: HTTPServingOptions = HTTPServingOptions(),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let connections = ConcurrencySlots(maximum: options.maximumConnections)
        let http1 = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [ConnectionLimit(connections)], idleTimeout: TimeAmount(options.idleTimeout)))
        return Application(
            router: LatchkeyRoutes.router(for: server, options: options),
            server: try options.tls.map { try .tls(http1, tlsConfiguration: $0) } ?? http1,
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            services: services + [PurgeService(server: server, interval: purgeInterval), AuditService(server: server)],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: server.logger)
    }

    /// Runs `application` until SIGTERM or SIGINT. Then the listener closes at once, requests in
    /// flight get `options.shutdownTimeout` to finish, and the services (the store's pool last)
    /// shut down; whatever is still running after that is cancelled.
    public static func run(
        _ application: some ApplicationProtocol, options: HTTPServingOptions, logger: Logger
    ) async throws {
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: application)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = options.shutdownTimeout
        configuration.maximumCancellationDuration = .seconds(10)
        try await ServiceGroup(configuration: configuration).run()
    }
}
