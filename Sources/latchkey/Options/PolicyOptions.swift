import ArgumentParser
import Foundation
import LatchkeyHTTP
import LatchkeyServer

/// `serve` options for how long codes, tokens and browser sessions live.
struct LifetimeOptions: ParsableArguments {
    @Option(help: "Authorization code lifetime.") var codeLifetime: Double = 60
    @Option(help: "Access token lifetime (expires_in).") var accessTokenLifetime: Double = 28_800
    @Option(help: "Refresh token lifetime, renewed at each rotation.") var refreshTokenLifetime: Double = 2_592_000
    @Option(help: "Absolute browser session lifetime after sign-in.") var sessionLifetime: Double = 43_200
    @Option(help: "A browser session unused this long ends.") var sessionIdleTimeout: Double = 1_800
    @Option(help: "ID token lifetime (a replaced signing key stays published this much longer).")
    var idTokenLifetime: Double = 3_600

    func apply(to configuration: inout ServerConfiguration) throws {
        let values: [(String, Double)] = [
            ("--code-lifetime", codeLifetime), ("--access-token-lifetime", accessTokenLifetime),
            ("--refresh-token-lifetime", refreshTokenLifetime), ("--session-lifetime", sessionLifetime),
            ("--session-idle-timeout", sessionIdleTimeout), ("--id-token-lifetime", idTokenLifetime),
        ]
        for (name, value) in values where !(value >= 1) { throw fail("\(name) must be at least 1 second.") }
        guard idTokenLifetime <= 86_400 else { throw fail("--id-token-lifetime may be at most one day (86400 seconds).") }
        guard codeLifetime <= 600 else { throw fail("--code-lifetime may be at most 600 seconds (RFC 6749 §4.1.2).") }
        configuration.codeLifetime = codeLifetime
        configuration.accessTokenLifetime = accessTokenLifetime
        configuration.refreshTokenLifetime = refreshTokenLifetime
        configuration.sessionLifetime = sessionLifetime
        configuration.sessionIdleTimeout = sessionIdleTimeout
        configuration.idTokenLifetime = idTokenLifetime
    }
}

/// `serve` options for refusing guessers: failed sign-ins and client authentications counted in
/// the store, so every instance shares them.
struct ThrottlingOptions: ParsableArguments {
    @Option(help: "Failed sign-ins per account in one window before its sign-in is refused.") var signInAttempts = 10
    @Option(help: "Failed sign-ins from one client address in one window.") var signInAttemptsPerAddress = 100
    @Option(help: "Seconds of the sign-in window, from the first failure.") var signInWindow: Double = 900
    @Option(help: "Failed authentications per client id in 60 seconds before it is refused (429).") var clientAuthAttempts = 20
    @Option(
        help: """
            A reverse proxy's address or CIDR range (repeat for several): from these peers only, \
            X-Forwarded-For names the client for throttling and the audit log.
            """)
    var trustedProxy: [String] = []

    func apply(to configuration: inout ServerConfiguration) throws {
        guard signInAttempts >= 1, signInAttemptsPerAddress >= 1, clientAuthAttempts >= 1 else {
            throw fail("The attempt limits must be at least 1.")
        }
        guard signInWindow >= 1 else { throw fail("--sign-in-window must be at least 1 second.") }
        configuration.signInAttemptsPerAccount = signInAttempts
        configuration.signInAttemptsPerAddress = signInAttemptsPerAddress
        configuration.signInWindow = signInWindow
        configuration.clientAuthenticationAttempts = clientAuthAttempts
        do { _ = try TrustedProxies(trustedProxy) } catch let error as AdministrationError { throw fail(error.description) }
        configuration.trustedProxies = trustedProxy
    }
}

/// `serve` options for the admin console (`/admin`).
struct ConsoleOptions: ParsableArguments {
    @Flag(help: "Let any signed-in user register personal apps in the console (and see and edit only those).")
    var selfServiceApps = false
    @Option(help: "Seconds an admin-console page may go unused before it asks for sign-in again.")
    var adminIdleTimeout: Double = 900
    @Option(help: "Seconds for which a typed password allows deleting, rotating secrets and changing roles in the console.")
    var adminReauthenticationWindow: Double = 600
    @Option(help: "Days the admin console's Activity page keeps audit events (the log keeps them all).")
    var activityRetentionDays = 30

    func apply(to configuration: inout ServerConfiguration) throws {
        guard adminIdleTimeout >= 60 else { throw fail("--admin-idle-timeout must be at least 60 seconds.") }
        guard adminReauthenticationWindow >= 30 else {
            throw fail("--admin-reauthentication-window must be at least 30 seconds.")
        }
        guard activityRetentionDays >= 1 else { throw fail("--activity-retention-days must be at least 1.") }
        configuration.selfServiceApps = selfServiceApps
        configuration.activityRetention = Double(activityRetentionDays) * 86_400
        configuration.adminSessionIdleTimeout = adminIdleTimeout
        configuration.adminReauthenticationWindow = adminReauthenticationWindow
    }
}

extension DynamicRegistrationPolicy.Mode: ExpressibleByArgument {}
extension ClientMetadataDocumentPolicy.Mode: ExpressibleByArgument {}

/// `serve` options for clients that register themselves (RFC 7591).
struct RegistrationOptions: ParsableArguments {
    @Option(
        help: """
            Dynamic client registration at /oauth2/register: off, open (public native apps with loopback \
            or private-use-scheme redirects), or initial-access-token (see latchkey registration-tokens).
            """)
    var dynamicRegistration: DynamicRegistrationPolicy.Mode = .off
    @Option(help: "Days after which a self-registered app that was never used is deleted.")
    var unusedRegistrationDays = 7
    @Option(help: "Registrations allowed from one client address per hour.") var registrationsPerAddress = 20
    @Option(
        help: """
            Client ID Metadata Documents (an https URL as client_id): off, all, or listed (only the \
            --client-metadata-domain hosts).
            """)
    var clientMetadataDocuments: ClientMetadataDocumentPolicy.Mode = .off
    @Option(help: "A domain whose hosts may serve client metadata documents (repeat for several).")
    var clientMetadataDomain: [String] = []
    @Option(help: "For tests only: a PEM file of extra certificate authorities trusted when fetching documents.")
    var clientMetadataCaFile: String?
    @Flag(help: "For tests only, never in production: let documents be fetched from loopback addresses.")
    var clientMetadataAllowLoopback = false

    func apply(to configuration: inout ServerConfiguration) throws {
        guard unusedRegistrationDays >= 1 else { throw fail("--unused-registration-days must be at least 1.") }
        guard registrationsPerAddress >= 1 else { throw fail("--registrations-per-address must be at least 1.") }
        configuration.dynamicRegistration.mode = dynamicRegistration
        configuration.dynamicRegistration.unusedRetention = Double(unusedRegistrationDays) * 86_400
        configuration.dynamicRegistration.registrationsPerAddress = registrationsPerAddress
        if clientMetadataDocuments == .listed, clientMetadataDomain.isEmpty {
            throw fail("--client-metadata-documents listed needs at least one --client-metadata-domain.")
        }
        if let file = clientMetadataCaFile, !FileManager.default.isReadableFile(atPath: file) {
            throw fail("--client-metadata-ca-file \(file) cannot be read.")
        }
        configuration.clientMetadataDocuments = ClientMetadataDocumentPolicy(
            mode: clientMetadataDocuments, allowedDomains: clientMetadataDomain)
    }

    /// The fetcher for metadata documents, when they are accepted.
    var fetcher: GuardedDocumentFetcher? {
        guard clientMetadataDocuments != .off else { return nil }
        return GuardedDocumentFetcher(allowLoopback: clientMetadataAllowLoopback, extraTrustRootsFile: clientMetadataCaFile)
    }
}
