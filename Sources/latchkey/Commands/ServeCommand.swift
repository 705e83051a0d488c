import ArgumentParser
import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyHTTP
import LatchkeyServer
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the authorization server until SIGINT or SIGTERM.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one).") var port = 8080
    @Option(help: "Issuer URL as clients reach it (default: http://HOST:PORT).") var issuer: String?
    @OptionGroup var store: StoreOptions
    @Flag(help: "On an empty store, create a demo user and a demo native client, and print how to try them.")
    var dev = false
    @Flag(name: .customLong("require-pkce"), help: "Require PKCE from confidential (web) clients too.")
    var requirePKCE = false
    @Option(help: "Seconds a just-rotated refresh token may be retried while its successor is unused (0 = strict).")
    var refreshGracePeriod: Double = 60
    @OptionGroup(title: "Lifetimes (seconds)") var lifetimes: LifetimeOptions
    @OptionGroup(title: "Throttling") var throttling: ThrottlingOptions

    func run() async throws {
        bootstrapLogging()
        let issuer = self.issuer ?? "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        if let problem = ServerConfiguration.issuerProblem(issuer) { throw fail("--issuer: \(problem)") }
        var configuration = ServerConfiguration(issuer: issuer)
        configuration.requirePKCEForConfidentialClients = requirePKCE
        configuration.refreshGracePeriod = refreshGracePeriod
        try lifetimes.apply(to: &configuration)
        try throttling.apply(to: &configuration)
        let store = try await self.store.openStore()
        let hasher = BcryptPasswordHasher()
        let server = AuthorizationServer(
            store: store, configuration: configuration, passwordHasher: hasher, logger: Logger(label: "latchkey"))
        if dev { try await seedDemo(Administration(store: store, passwordHasher: hasher), issuer: issuer) }
        let dataDir = self.store.location
        let app = LatchkeyApplication.make(server: server, host: host, port: port) { bound in
            say("Latchkey is serving \(issuer) on \(host):\(bound) with data in \(dataDir). Stop with Ctrl-C.")
            say("Metadata: \(issuer)/.well-known/oauth-authorization-server")
        }
        try await app.runService()
    }

    /// Creates the demo user and client on an empty store and prints what to do next.
    private func seedDemo(_ admin: Administration, issuer: String) async throws {
        guard try await admin.store.users().isEmpty, try await admin.store.clients().isEmpty else {
            say("--dev: the store already has users or clients; nothing was added.")
            return
        }
        let password = RandomToken.alphanumeric(length: 16)
        _ = try await admin.createUser(username: "demo", displayName: "Demo User", password: password)
        let client = try await admin.registerClient(
            type: .native, name: "Latchkey Demo App", redirectURIs: ["http://127.0.0.1/callback"],
            scopes: ["profile", "activity", "sleep"],
            consentMarkdown: "This demo app was created by `latchkey serve --dev`. It only **reads** what you allow.")
        say("""
            --dev: created a demo user and a demo native client (shown only now):
              username:  demo
              password:  \(password)
              client_id: \(client.client.id)   (redirect http://127.0.0.1/callback, any port; scopes profile activity sleep)
            Next: open the authorization URL from the README's walk-through with this client_id in a browser,
            sign in as demo, and exchange the code at \(issuer)/oauth2/token.
            """)
    }
}

/// Writes a line to stdout at once (unbuffered), so a supervisor or test sees it immediately.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
