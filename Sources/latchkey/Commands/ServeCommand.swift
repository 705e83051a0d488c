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
        commandName: "serve", abstract: "Run the authorization server until SIGINT or SIGTERM.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one).") var port = 8080
    @Option(help: "Issuer URL as clients reach it (default: http://HOST:PORT, with the bound port when --port is 0).")
    var issuer: String?
    @Option(help: "Once listening, write one JSON object here: issuer, port, pid, and the --dev credentials (mode 0600).")
    var readyFile: String?
    @OptionGroup var store: StoreOptions
    @Flag(help: "On an empty store, create a demo user and a demo native client, and print how to try them.")
    var dev = false
    @Flag(name: .customLong("require-pkce"), help: "Require PKCE from confidential (web) clients too.")
    var requirePKCE = false
    @Option(help: "Seconds a just-rotated refresh token may be retried while its successor is unused (0 = strict).")
    var refreshGracePeriod: Double = 60
    @OptionGroup(title: "Lifetimes (seconds)") var lifetimes: LifetimeOptions
    @OptionGroup(title: "Throttling") var throttling: ThrottlingOptions
    @OptionGroup(title: "Admin console") var console: ConsoleOptions
    @OptionGroup(title: "Client registration") var registration: RegistrationOptions

    func run() async throws {
        bootstrapLogging()
        // With --port 0 the issuer must name the port the server will bind, so it is reserved first.
        let reservation = port == 0 ? PortReservation(host: host) : nil
        if port == 0, reservation == nil, self.issuer == nil {
            throw fail("--port 0 needs --host to be an IP address (or localhost), or an explicit --issuer.")
        }
        let port = reservation?.port ?? self.port
        let issuer = self.issuer ?? "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        if let problem = ServerConfiguration.issuerProblem(issuer) { throw fail("--issuer: \(problem)") }
        var configuration = ServerConfiguration(issuer: issuer)
        configuration.requirePKCEForConfidentialClients = requirePKCE
        configuration.refreshGracePeriod = refreshGracePeriod
        try lifetimes.apply(to: &configuration)
        try throttling.apply(to: &configuration)
        try console.apply(to: &configuration)
        try registration.apply(to: &configuration)
        let keyEncryptionKey = try self.store.keyEncryptionKey()
        let store = try await self.store.openStore()
        let hasher = BcryptPasswordHasher()
        let signingKeys = SigningKeyring(
            store: store, keyEncryptionKey: keyEncryptionKey, signedTokenLifetime: configuration.idTokenLifetime)
        // A fresh store gets its first keys now; a wrong key-encryption key stops here, before listening.
        do { try await signingKeys.ensureKeys(at: configuration.now()) } catch let error as SigningKeyError {
            throw fail(error.description)
        }
        let server = AuthorizationServer(
            store: store, configuration: configuration, passwordHasher: hasher, signingKeys: signingKeys,
            logger: Logger(label: "latchkey"), clientMetadataFetcher: registration.fetcher)
        let demo = dev ? try await seedDemo(Administration(store: store, passwordHasher: hasher), issuer: issuer) : nil
        let dataDir = self.store.location
        let host = self.host
        let readyFile = self.readyFile
        // A store with connections to close (PostgreSQL) joins the service group, to be closed after the server.
        let storeServices = [store].compactMap { $0 as? any Service }
        let app = LatchkeyApplication.make(server: server, host: host, port: port, services: storeServices) { bound in
            reservation?.release()
            say("Latchkey is serving \(issuer) on \(host):\(bound) with data in \(dataDir). Stop with Ctrl-C.")
            say("Metadata: \(issuer)/.well-known/oauth-authorization-server")
            if let readyFile {
                do {
                    try ReadyFile(issuer: issuer, port: bound, demo: demo).write(to: readyFile)
                } catch {
                    // Whoever waits for the file would wait forever: stop instead.
                    FileHandle.standardError.write(Data("latchkey: cannot write --ready-file \(readyFile): \(error)\n".utf8))
                    Foundation.exit(1)
                }
            }
        }
        try await app.runService()
    }

    /// Creates the demo user and client on an empty store and prints what to do next.
    /// - Returns: what was created, or `nil` when the store was not empty.
    private func seedDemo(_ admin: Administration, issuer: String) async throws -> ReadyFile.Demo? {
        guard try await admin.store.users().isEmpty, try await admin.store.clients().isEmpty else {
            say("--dev: the store already has users or clients; nothing was added.")
            return nil
        }
        let password = RandomToken.alphanumeric(length: 16)
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
