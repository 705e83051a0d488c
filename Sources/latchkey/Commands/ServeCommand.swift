import ArgumentParser
import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyHTTP
import LatchkeyPasswords
import LatchkeyServer
import Logging
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the authorization server until SIGINT or SIGTERM.",
        discussion: Setting.helpText)

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("Settings as --NAME VALUE (listed below); --config FILE; --print-config.", valueName: "settings"))
    var arguments: [String] = []

    func run() async throws {
        let settings: Settings
        let serve: ServeSettings
        do {
            settings = try await Settings(arguments: arguments)
            serve = try ServeSettings(settings)
            if arguments.contains("--print-config") {
                print(try settings.printed())
                return
            }
        } catch let error as SettingError {
            throw settingsFailure(error.description)
        }
        var options = HTTPServingOptions()
        if let tls = serve.tls {
            do {
                options.tls = try HTTPServingOptions.tls(certificateFile: tls.certificate, keyFile: tls.key)
            } catch {
                throw settingsFailure("tls-certificate and tls-key must be a PEM certificate chain and its key (\(error)).")
            }
        }
        bootstrapLogging(format: serve.logFormat, level: serve.logLevel)
        // Before the store opens: counters made before this would count nowhere.
        let metrics = serve.metricsListener.map { _ in MetricsExporter.bootstrap() }
        // With --port 0 the issuer must name the port the server will bind, so it is reserved first.
        let reservation = serve.port == 0 ? PortReservation(host: serve.host) : nil
        if serve.port == 0, reservation == nil, serve.issuer == nil {
            throw settingsFailure("port 0 needs host to be an IP address (or localhost), or an explicit issuer.")
        }
        let host = serve.host
        let port = reservation?.port ?? serve.port
        let scheme = serve.tls == nil ? "http" : "https"
        let issuer = serve.issuer ?? "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        if let problem = ServerConfiguration.issuerProblem(issuer) {
            throw settingsFailure("host \(host) does not make an issuer URL (\(problem)); give issuer.")
        }
        var configuration = serve.server
        configuration.issuer = issuer
        options.recordsMetrics = metrics != nil
        options.accessLog = serve.accessLog
        options.shutdownTimeout = serve.shutdownTimeout
        options.idleTimeout = serve.idleTimeout
        options.maximumConnections = serve.maximumConnections
        let keyEncryptionKey = try serve.store.keyEncryptionKey()
        let store = try await serve.store.openStore()
        let hasher = BcryptPasswordHasher()
        let signingKeys = SigningKeyring(
            store: store, keyEncryptionKey: keyEncryptionKey, signedTokenLifetime: configuration.idTokenLifetime)
        // A fresh store gets its first keys now; a wrong key-encryption key stops here, before listening.
        do { try await signingKeys.ensureKeys(at: configuration.now()) } catch let error as SigningKeyError {
            throw fail(error.description)
        }
        let logger = Logger(label: "latchkey")
        let outbox = serve.mail.map { mail in
            MailOutbox(
                store: store, keyEncryptionKey: keyEncryptionKey, messageIDDomain: String(mail.from.domain),
                now: configuration.now)
        }
        let fetcher = serve.clientMetadataFetcher
        let server = AuthorizationServer(
            store: store, configuration: configuration, passwordHasher: hasher, signingKeys: signingKeys,
            logger: logger, clientMetadataFetcher: fetcher,
            mailer: outbox.map { AccountMailer(outbox: $0, issuer: issuer) }, backChannelNotifier: fetcher)
        let demo =
            serve.dev ? try await seedDemo(server.administration, issuer: issuer) : nil
        // For `latchkey users invite`, which builds the invitation's link as this server would.
        try await store.recordServerFact(name: "issuer", value: issuer, at: configuration.now())
        if let mail = serve.mail {
            try await store.recordServerFact(name: "mail_from", value: mail.from.rawValue, at: configuration.now())
        }
        try await store.recordServerFact(name: "sign_up", value: configuration.signUp.mode.rawValue, at: configuration.now())
        let dataDir = serve.store.location
        // A store with connections to close (PostgreSQL) joins the service group, to be closed after the server.
        var services = [store].compactMap { $0 as? any Service }
        if let mail = serve.mail, let outbox {
            services.append(MailOutboxService(outbox: outbox, mail: mail, logger: Logger(label: "latchkey.mail")))
            say("E-mail: through \(mail.client.relay) from \(mail.from).")
        }
        if let logouts = server.backChannelLogout {
            services.append(BackChannelLogoutService(logouts: logouts, logger: Logger(label: "latchkey.logout")))
        }
        // The ready file is written once every listener is bound.
        let startup = Startup(readyFile: serve.readyFile, issuer: issuer, demo: demo, waitsForMetrics: metrics != nil)
        if let metrics, let listener = serve.metricsListener {
            services.append(
                metrics.application(host: listener.host, port: listener.port, logger: logger) { bound in
                    say("Metrics: http://\(listener.hostInURL):\(bound)/metrics")
                    startup.metricsListening(on: bound)
                })
        }
        let app = try LatchkeyApplication.make(
            server: server, host: host, port: port, purgeInterval: serve.purgeInterval, services: services,
            options: options
        ) { bound in
            reservation?.release()
            say("Latchkey is serving \(issuer) on \(host):\(bound) with data in \(dataDir). Stop with Ctrl-C.")
            say("Metadata: \(issuer)/.well-known/oauth-authorization-server")
            startup.serverListening(on: bound)
        }
        try await LatchkeyApplication.run(app, options: options, logger: logger)
    }

    /// Writes `message` to stderr and gives exit code 2: a mistake in the configuration, found
    /// before anything binds, which a supervisor should not retry.
    private func settingsFailure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("latchkey: \(message)\n".utf8))
        return ExitCode(2)
    }

    /// Creates the demo user and client on an empty store and prints what to do next.
    /// - Returns: what was created, or `nil` when the store was not empty.
    private func seedDemo(_ admin: Administration, issuer: String) async throws -> ReadyFile.Demo? {
        guard try await admin.store.users().isEmpty, try await admin.store.clients().isEmpty else {
            say("--dev: the store already has users or clients; nothing was added.")
            return nil
        }
        let password = RandomToken.alphanumeric(length: max(16, admin.passwordPolicy.minimumLength))
        _ = try await admin.createUser(
            username: "demo", displayName: "Demo User", password: password, role: .admin, email: "demo@example.com",
            emailVerified: true)
        let client = try await admin.registerClient(
            type: .native, name: "Latchkey Demo App", redirectURIs: ["http://127.0.0.1/callback"],
            scopes: ["openid", "profile", "email", "activity", "sleep"],
            consentMarkdown: "This demo app was created by `latchkey serve --dev`. It only **reads** what you allow.")
        say(
            """
            --dev: created a demo user and a demo native client (shown only now):
              username:  demo   (an administrator: the admin console is at \(issuer)/admin)
              password:  \(password)
              client_id: \(client.client.id)   (redirect http://127.0.0.1/callback, any port; scopes openid profile email activity sleep)
            Next: open the authorization URL from the README's walk-through with this client_id in a browser,
            sign in as demo, and exchange the code at \(issuer)/oauth2/token.
            """)
        return ReadyFile.Demo(username: "demo", password: password, clientID: client.client.id.rawValue)
    }
}

/// Writes a line to stdout at once (unbuffered), so a supervisor or test sees it immediately.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
