import Foundation
import LatchkeyHTTP
import LatchkeyServer
import Logging

/// Everything `serve` needs, read from ``Settings`` and checked, before anything binds.
struct ServeSettings: Sendable {
    var host: String
    var port: Int
    var issuer: String?
    var readyFile: String?
    var dev: Bool
    var store: StoreSettings
    /// The server's behaviour, with a placeholder issuer until the port is known.
    var server: ServerConfiguration
    var metricsListener: ListenAddress?
    var logLevel: Logger.Level
    var logFormat: LogFormat
    var accessLog: Bool
    var tls: (certificate: String, key: String)?
    var shutdownTimeout: Duration
    /// How often expired rows are deleted.
    var purgeInterval: Duration
    var idleTimeout: Duration
    var maximumConnections: Int
    var clientMetadataCAFile: String?
    var clientMetadataAllowLoopback: Bool
    /// The SMTP relay and sender, when `smtp-url` is set.
    var mail: MailSettings?

    init(_ settings: Settings) throws {
        host = try settings.text("host") ?? "127.0.0.1"
        mail = try MailSettings(settings)
        port = try settings.count("port")
        issuer = try settings.text("issuer")
        if let issuer, let problem = ServerConfiguration.issuerProblem(issuer) {
            throw settings.problem("issuer", "is not usable: \(problem)")
        }
        readyFile = try settings.text("ready-file")
        dev = try settings.flag("dev")
        store = try StoreSettings(settings)

        var server = ServerConfiguration(issuer: issuer ?? "http://localhost")
        server.requirePKCEForConfidentialClients = try settings.flag("require-pkce")
        server.requirePushedAuthorizationRequests = try settings.flag("require-pushed-authorization-requests")
        server.pushedRequestsPerClient = try settings.count("pushed-requests-per-client")
        server.requireDPoPNonce = try settings.flag("dpop-nonce")
        server.dpopProofLifetime = try settings.seconds("dpop-proof-lifetime")
        server.refreshGracePeriod = try settings.seconds("refresh-grace-period")
        server.codeLifetime = try settings.seconds("code-lifetime")
        server.accessTokenLifetime = try settings.seconds("access-token-lifetime")
        server.refreshTokenLifetime = try settings.seconds("refresh-token-lifetime")
        server.sessionLifetime = try settings.seconds("session-lifetime")
        server.sessionIdleTimeout = try settings.seconds("session-idle-timeout")
        server.idTokenLifetime = try settings.seconds("id-token-lifetime")
        server.deviceCodeLifetime = try settings.seconds("device-code-lifetime")
        server.devicePollInterval = try settings.count("device-poll-interval")
        server.signInAttemptsPerAccount = try settings.count("sign-in-attempts")
        server.signInAttemptsPerAddress = try settings.count("sign-in-attempts-per-address")
        server.signInWindow = try settings.seconds("sign-in-window")
        server.clientAuthenticationAttempts = try settings.count("client-auth-attempts")
        server.userCodeAttemptsPerAddress = try settings.count("user-code-attempts-per-address")
        server.userCodeAttemptsOverall = try settings.count("user-code-attempts")
        server.trustedProxies = try settings.list("trusted-proxy")
        do { _ = try TrustedProxies(server.trustedProxies) } catch let error as AdministrationError {
            throw settings.problem("trusted-proxy", "is not usable: \(error.description)")
        }
        server.selfServiceApps = try settings.flag("self-service-apps")
        server.passwordMinimumLength = try settings.count("password-min-length")
        server.mailDelivery = mail.map { "\($0.client.relay) from \($0.from)" }
        server.adminSessionIdleTimeout = try settings.seconds("admin-idle-timeout")
        server.adminReauthenticationWindow = try settings.seconds("admin-reauthentication-window")
        server.activityRetention = Double(try settings.count("activity-retention-days")) * 86_400
        server.signUp.mode = SignUpPolicy.Mode(rawValue: try settings.choice("sign-up"))!
        server.passwordSignIn = try settings.choice("password-sign-in") == "on"
        if !server.passwordSignIn, server.signUp.mode != .off {
            throw settings.problem(
                "sign-up", "\(server.signUp.mode.rawValue) makes accounts with passwords, which password-sign-in off refuses")
        }
        server.signUp.emailDomains = try settings.list("sign-up-domain").map { $0.lowercased() }
        server.signUp.requiresVerifiedEmail = try settings.choice("sign-up-email-verification") == "required"
        server.signUp.signUpsPerAddress = try settings.count("sign-ups-per-address")
        server.requireSecondFactor = SecondFactorPolicy(rawValue: try settings.choice("require-second-factor"))!
        if !server.signUp.emailDomains.isEmpty, !server.signUp.requiresVerifiedEmail {
            throw settings.problem(
                "sign-up-domain",
                "needs sign-up-email-verification required: an unconfirmed address proves nothing about its domain")
        }
        if server.signUp.mode != .off, mail == nil {
            throw settings.problem(
                "sign-up", "\(server.signUp.mode.rawValue) needs smtp-url and mail-from, to send the verification e-mails")
        }
        server.acceptsLocalhostRedirects = try settings.choice("localhost-redirect-uris") == "accept"
        server.dynamicRegistration.mode = DynamicRegistrationPolicy.Mode(rawValue: try settings.choice("dynamic-registration"))!
        server.dynamicRegistration.unusedRetention = Double(try settings.count("unused-registration-days")) * 86_400
        server.dynamicRegistration.registrationsPerAddress = try settings.count("registrations-per-address")
        server.dynamicRegistration.registrationsOverall = try settings.count("registrations-overall")
        let documents = ClientMetadataDocumentPolicy.Mode(rawValue: try settings.choice("client-metadata-documents"))!
        let domains = try settings.list("client-metadata-domain")
        if documents == .listed, domains.isEmpty {
            throw settings.problem("client-metadata-documents", "listed needs at least one client-metadata-domain")
        }
        server.clientMetadataDocuments = ClientMetadataDocumentPolicy(mode: documents, allowedDomains: domains)
        clientMetadataCAFile = try settings.text("client-metadata-ca-file")
        if let file = clientMetadataCAFile, !FileManager.default.isReadableFile(atPath: file) {
            throw settings.problem("client-metadata-ca-file", "names \(file), which cannot be read")
        }
        clientMetadataAllowLoopback = try settings.flag("client-metadata-allow-loopback")
        server.metricsClientLabels = try settings.flag("metrics-client-labels")
        self.server = server

        if let address = try settings.text("metrics-address") {
            guard let listener = ListenAddress(address, defaultHost: "127.0.0.1") else {
                throw settings.problem("metrics-address", "must be HOST:PORT or PORT, such as 127.0.0.1:9464, not \(address)")
            }
            metricsListener = listener
        }
        logLevel = Logger.Level(rawValue: try settings.choice("log-level"))!
        logFormat = LogFormat(rawValue: try settings.choice("log-format"))!
        accessLog = try settings.flag("access-log")
        switch (try settings.text("tls-certificate"), try settings.text("tls-key")) {
        case (nil, nil): tls = nil
        case (let certificate?, let key?):
            for (name, file) in [("tls-certificate", certificate), ("tls-key", key)]
            where !FileManager.default.isReadableFile(atPath: file) {
                throw settings.problem(name, "names \(file), which cannot be read")
            }
            tls = (certificate, key)
        case (nil, _?): throw settings.problem("tls-key", "needs tls-certificate too")
        case (_?, nil): throw settings.problem("tls-certificate", "needs tls-key too")
        }
        shutdownTimeout = .milliseconds(Int64(try settings.seconds("shutdown-timeout") * 1000))
        purgeInterval = .milliseconds(Int64(try settings.seconds("purge-interval") * 1000))
        idleTimeout = .milliseconds(Int64(try settings.seconds("idle-timeout") * 1000))
        maximumConnections = try settings.count("max-connections")
    }

    /// The fetcher for client metadata documents (when they are accepted) and for the key sets
    /// of clients registered with a `jwks_uri`.
    var clientMetadataFetcher: GuardedDocumentFetcher? {
        GuardedDocumentFetcher(
            allowLoopback: clientMetadataAllowLoopback, extraTrustRootsFile: clientMetadataCAFile)
    }
}
