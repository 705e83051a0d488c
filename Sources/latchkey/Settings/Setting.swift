import LatchkeyHTTP
import LatchkeyServer

/// One setting of `latchkey serve`: its name, which is also its flag (`--NAME`), its environment
/// variable (`LATCHKEY_NAME`, upper case, `-` as `_`) and its key in the configuration file; its
/// kind; its default; and the help line. ``Setting/all`` is the one list of them, so a default is
/// written once.
struct Setting: Sendable {
    enum Kind: Sendable {
        /// A number of seconds (fractions allowed), within `range`.
        case seconds(ClosedRange<Double>)
        /// A whole number within `range`.
        case count(ClosedRange<Int>)
        /// On or off: `--NAME` alone means on; `true`/`false` elsewhere.
        case flag
        /// Text, such as a path or a URL.
        case text
        /// One of these words.
        case choice([String])
        /// Several values: the flag repeated, a comma-separated variable, a JSON array in the file.
        case list
    }

    enum Default: Sendable {
        case none
        case number(Double)
        case whole(Int)
        case on(Bool)
        case text(String)
        case list([String])
    }

    var name: String
    var kind: Kind
    var defaultValue: Default
    var help: String
    /// Never printed.
    var isSecret = false
    /// Never taken from a flag, where `ps` would show it to every user of the machine.
    var notAFlag = false
    /// Why the range is what it is, added to the message when a value falls outside it.
    var reason: String? = nil

    /// `LATCHKEY_NAME`.
    var environmentName: String {
        "LATCHKEY_" + name.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    }
}

extension Setting {
    /// Where the defaults of the server's own behaviour come from: ``ServerConfiguration``.
    private static let server = ServerConfiguration(issuer: "http://localhost")

    /// Every setting, in the order `--help` and `--print-config` list them.
    static let all: [(section: String, settings: [Setting])] = [
        (
            "Listening",
            [
                Setting(name: "host", kind: .text, defaultValue: .text("127.0.0.1"), help: "Address to listen on."),
                Setting(
                    name: "port", kind: .count(0...65_535), defaultValue: .whole(8080),
                    help: "Port to listen on (0 picks a free one)."),
                Setting(
                    name: "issuer", kind: .text, defaultValue: .none,
                    help: "Issuer URL as clients reach it (default: http://HOST:PORT, with the bound port when the port is 0)."),
                Setting(
                    name: "tls-certificate", kind: .text, defaultValue: .none,
                    help: "PEM file of the certificate chain: serve https on the port (with tls-key)."),
                Setting(
                    name: "tls-key", kind: .text, defaultValue: .none,
                    help: "PEM file of the certificate's private key (keep it mode 0600)."),
                Setting(
                    name: "ready-file", kind: .text, defaultValue: .none,
                    help: "Once listening, write one JSON object here: issuer, port, metrics_port, pid, the dev credentials."),
                Setting(
                    name: "purge-interval", kind: .seconds(1...86_400), defaultValue: .number(300),
                    help: "Seconds between the deletions of expired sessions, codes, tokens and grants."),
                Setting(
                    name: "shutdown-timeout", kind: .seconds(0...3_600), defaultValue: .number(30),
                    help: "On SIGTERM or SIGINT, seconds to let requests in flight finish before closing anyway."),
                Setting(
                    name: "idle-timeout", kind: .seconds(1...3_600), defaultValue: .number(30),
                    help:
                        "Seconds a connection may go without completing a request head, body piece or end before it is closed (idle keep-alive, a slow request head, a stalled TLS handshake)."
                ),
                Setting(
                    name: "max-connections", kind: .count(1...1_000_000),
                    defaultValue: .whole(HTTPServingOptions.defaultMaximumConnections),
                    help:
                        "Most HTTP connections open at once; more are closed when accepted (default: the open-file limit less 64, at most 16384)."
                ),
            ]
        ),
        (
            "Store",
            [
                Setting(
                    name: "data-dir", kind: .text, defaultValue: .text("latchkey-data"),
                    help: "Folder holding the SQLite database (created if missing)."),
                Setting(
                    name: "database-url", kind: .text, defaultValue: .none,
                    help:
                        "PostgreSQL instead of SQLite, for several instances: postgres://user:password@host:5432/db[?sslmode=require].",
                    isSecret: true),
                Setting(
                    name: "key-encryption-key-file", kind: .text, defaultValue: .none,
                    help:
                        "File holding the key that seals the signing keys (32 bytes, base64). Default with SQLite: DATA_DIR/key-encryption.key, made on first use."
                ),
                Setting(
                    name: "key-encryption-key", kind: .text, defaultValue: .none,
                    help: "The key itself, instead of the file (environment or configuration file only).", isSecret: true,
                    notAFlag: true),
                Setting(
                    name: "database-password-file", kind: .text, defaultValue: .none,
                    help: "File holding the PostgreSQL password, for a database-url written without one."),
                Setting(
                    name: "database-password", kind: .text, defaultValue: .none,
                    help: "The PostgreSQL password itself (environment or configuration file only).", isSecret: true,
                    notAFlag: true),
            ]
        ),
        (
            "Behaviour",
            [
                Setting(
                    name: "dev", kind: .flag, defaultValue: .on(false),
                    help: "On an empty store, create a demo user and a demo native client, and print how to try them."),
                Setting(
                    name: "password-min-length", kind: .count(8...64), defaultValue: .whole(server.passwordMinimumLength),
                    help:
                        "The fewest characters a new password may have; common passwords and the account's own name are refused at any length.",
                    reason: "NIST SP 800-63B asks for at least 8; bcrypt reads 72 bytes"),
                Setting(
                    name: "require-pkce", kind: .flag, defaultValue: .on(server.requirePKCEForConfidentialClients),
                    help: "Require PKCE from confidential (web) clients too."),
                Setting(
                    name: "require-pushed-authorization-requests", kind: .flag,
                    defaultValue: .on(server.requirePushedAuthorizationRequests),
                    help: "Refuse authorization requests that were not pushed to /oauth2/par first (RFC 9126), from every client."
                ),
                Setting(
                    name: "pushed-requests-per-client", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.pushedRequestsPerClient),
                    help: "Pushed authorization requests (/oauth2/par) one client may make per minute."),
                Setting(
                    name: "dpop-nonce", kind: .flag, defaultValue: .on(server.requireDPoPNonce),
                    help: "Require server nonces in DPoP proofs (RFC 9449 §8): a proof without a good one gets use_dpop_nonce."),
                Setting(
                    name: "dpop-proof-lifetime", kind: .seconds(5...600), defaultValue: .number(server.dpopProofLifetime),
                    help: "Seconds after its iat a DPoP proof is accepted (and its jti remembered against replay)."),
                Setting(
                    name: "refresh-grace-period", kind: .seconds(0...3_600), defaultValue: .number(server.refreshGracePeriod),
                    help: "Seconds a just-rotated refresh token may be retried while its successor is unused (0 = strict)."),
            ]
        ),
        (
            "Lifetimes (seconds)",
            [
                Setting(
                    name: "code-lifetime", kind: .seconds(1...600), defaultValue: .number(server.codeLifetime),
                    help: "Authorization code lifetime.", reason: "RFC 6749 §4.1.2"),
                Setting(
                    name: "access-token-lifetime", kind: .seconds(1...31_536_000),
                    defaultValue: .number(server.accessTokenLifetime), help: "Access token lifetime (expires_in)."),
                Setting(
                    name: "refresh-token-lifetime", kind: .seconds(1...315_360_000),
                    defaultValue: .number(server.refreshTokenLifetime), help: "Refresh token lifetime, renewed at each rotation."),
                Setting(
                    name: "session-lifetime", kind: .seconds(1...31_536_000), defaultValue: .number(server.sessionLifetime),
                    help: "Absolute browser session lifetime after sign-in."),
                Setting(
                    name: "session-idle-timeout", kind: .seconds(1...31_536_000),
                    defaultValue: .number(server.sessionIdleTimeout), help: "A browser session unused this long ends."),
                Setting(
                    name: "id-token-lifetime", kind: .seconds(1...86_400), defaultValue: .number(server.idTokenLifetime),
                    help: "ID token lifetime (a replaced signing key stays published this much longer).",
                    reason: "a signing key is kept for a day at most"),
                Setting(
                    name: "device-code-lifetime", kind: .seconds(60...3_600), defaultValue: .number(server.deviceCodeLifetime),
                    help: "How long a device flow's device code and user code work (expires_in).",
                    reason: "a user code is short, so its life is kept short too (RFC 8628 §5.1)"),
                Setting(
                    name: "device-poll-interval", kind: .count(1...60), defaultValue: .whole(server.devicePollInterval),
                    help: "Seconds a device waits between polls at first (interval; slow_down adds 5)."),
            ]
        ),
        (
            "Throttling",
            [
                Setting(
                    name: "sign-in-attempts", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.signInAttemptsPerAccount),
                    help: "Failed sign-ins per account in one window before its sign-in is refused."),
                Setting(
                    name: "sign-in-attempts-per-address", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.signInAttemptsPerAddress),
                    help: "Failed sign-ins from one client address in one window."),
                Setting(
                    name: "sign-in-window", kind: .seconds(1...86_400), defaultValue: .number(server.signInWindow),
                    help: "Seconds of the sign-in window, from the first failure."),
                Setting(
                    name: "client-auth-attempts", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.clientAuthenticationAttempts),
                    help: "Failed authentications per client id in 60 seconds before it is refused (429)."),
                Setting(
                    name: "user-code-attempts-per-address", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.userCodeAttemptsPerAddress),
                    help: "Device user codes entered (right or wrong) from one client address in one sign-in window."),
                Setting(
                    name: "user-code-attempts", kind: .count(1...1_000_000), defaultValue: .whole(server.userCodeAttemptsOverall),
                    help: "Wrong device user codes from everyone together in one sign-in window."),
                Setting(
                    name: "trusted-proxy", kind: .list, defaultValue: .list(server.trustedProxies),
                    help:
                        "A reverse proxy's address or CIDR range (several allowed): from these peers only, X-Forwarded-For names the client and X-Request-Id is kept."
                ),
            ]
        ),
        (
            "Admin console",
            [
                Setting(
                    name: "self-service-apps", kind: .flag, defaultValue: .on(server.selfServiceApps),
                    help: "Let any signed-in user register personal apps in the console (and see and edit only those)."),
                Setting(
                    name: "admin-idle-timeout", kind: .seconds(60...86_400),
                    defaultValue: .number(server.adminSessionIdleTimeout),
                    help: "Seconds an admin-console page may go unused before it asks for sign-in again."),
                Setting(
                    name: "admin-reauthentication-window", kind: .seconds(30...86_400),
                    defaultValue: .number(server.adminReauthenticationWindow),
                    help: "Seconds for which a typed password allows deleting, rotating secrets and changing roles."),
                Setting(
                    name: "activity-retention-days", kind: .count(1...3_650),
                    defaultValue: .whole(Int(server.activityRetention / 86_400)),
                    help: "Days the console's Activity page keeps audit events (the log keeps them all)."),
            ]
        ),
        (
            "Accounts",
            [
                Setting(
                    name: "password-sign-in", kind: .choice(["on", "off"]), defaultValue: .text("on"),
                    help:
                        "Whether people may sign in with a password. off: only through upstream identity providers (latchkey providers) and passkeys."
                ),
                Setting(
                    name: "sign-up", kind: .choice(SignUpPolicy.Mode.allCases.map(\.rawValue)),
                    defaultValue: .text(server.signUp.mode.rawValue),
                    help:
                        "Who may create an account at /signup: off (administrators only), open (anyone), or invite (latchkey users invite EMAIL). open and invite need smtp-url."
                ),
                Setting(
                    name: "sign-up-domain", kind: .list, defaultValue: .list([]),
                    help: "An e-mail domain whose addresses may sign up (several allowed; none listed: any domain)."),
                Setting(
                    name: "sign-up-email-verification", kind: .choice(["required", "optional"]),
                    defaultValue: .text(server.signUp.requiresVerifiedEmail ? "required" : "optional"),
                    help: "Whether an account made at /signup signs in to apps only once its e-mail address is confirmed."),
                Setting(
                    name: "sign-ups-per-address", kind: .count(1...1_000_000),
                    defaultValue: .whole(server.signUp.signUpsPerAddress),
                    help: "Sign-ups allowed from one client address (an IPv6 /64) per hour."),
                Setting(
                    name: "require-second-factor", kind: .choice(SecondFactorPolicy.allCases.map(\.rawValue)),
                    defaultValue: .text(server.requireSecondFactor.rawValue),
                    help:
                        "Who must use a second factor (an authenticator app) to sign in: off, admins or all. Whoever has none sets one up at sign-in."
                ),
            ]
        ),
        (
            "Client registration",
            [
                Setting(
                    name: "dynamic-registration", kind: .choice(DynamicRegistrationPolicy.Mode.allCases.map(\.rawValue)),
                    defaultValue: .text(server.dynamicRegistration.mode.rawValue),
                    help:
                        "Dynamic client registration at /oauth2/register: off, open (public native apps), or initial-access-token."
                ),
                Setting(
                    name: "unused-registration-days", kind: .count(1...3_650),
                    defaultValue: .whole(Int(server.dynamicRegistration.unusedRetention / 86_400)),
                    help: "Days after which a self-registered app that was never used is deleted."),
                Setting(
                    name: "registrations-per-address", kind: .count(1...1_000_000_000),
                    defaultValue: .whole(server.dynamicRegistration.registrationsPerAddress),
                    help: "Registrations allowed from one client address (an IPv6 /64) per hour."),
                Setting(
                    name: "registrations-overall", kind: .count(1...1_000_000_000),
                    defaultValue: .whole(server.dynamicRegistration.registrationsOverall),
                    help: "Registrations allowed from everyone together per hour."),
                Setting(
                    name: "localhost-redirect-uris", kind: .choice(["accept", "refuse"]),
                    defaultValue: .text(server.acceptsLocalhostRedirects ? "accept" : "refuse"),
                    help:
                        "Whether native apps may register http://localhost redirect URIs (matched on any port, as http://127.0.0.1 is)."
                ),
                Setting(
                    name: "client-metadata-documents", kind: .choice(ClientMetadataDocumentPolicy.Mode.allCases.map(\.rawValue)),
                    defaultValue: .text(server.clientMetadataDocuments.mode.rawValue),
                    help: "Client ID Metadata Documents (an https URL as client_id): off, all, or listed."),
                Setting(
                    name: "client-metadata-domain", kind: .list, defaultValue: .list([]),
                    help: "A domain whose hosts may serve client metadata documents (several allowed)."),
                Setting(
                    name: "client-metadata-ca-file", kind: .text, defaultValue: .none,
                    help:
                        "For tests only: a PEM file of extra certificate authorities trusted when fetching documents and client key sets."
                ),
                Setting(
                    name: "client-metadata-allow-loopback", kind: .flag, defaultValue: .on(false),
                    help:
                        "For tests only, never in production: let documents and client key sets be fetched from loopback addresses."
                ),
            ]
        ),
        (
            "E-mail",
            [
                Setting(
                    name: "smtp-url", kind: .text, defaultValue: .none,
                    help:
                        "The SMTP relay: smtps://[user@]host[:465] (TLS), smtp://[user@]host[:587] (STARTTLS required), or smtp://host:port?starttls=off for a local relay. serve then sends e-mail from its outbox.",
                    isSecret: true),
                Setting(
                    name: "mail-from", kind: .text, defaultValue: .none,
                    help: "The address e-mail comes from (From and the envelope sender)."),
                Setting(
                    name: "smtp-password-file", kind: .text, defaultValue: .none,
                    help: "File holding the SMTP password, for an smtp-url written without one."),
                Setting(
                    name: "smtp-password", kind: .text, defaultValue: .none,
                    help: "The SMTP password itself (environment or configuration file only).", isSecret: true,
                    notAFlag: true),
                Setting(
                    name: "smtp-ca-file", kind: .text, defaultValue: .none,
                    help: "PEM file of the certificates to trust for the relay's TLS instead of the system's (a private CA)."),
            ]
        ),
        (
            "Operations",
            [
                Setting(
                    name: "metrics-address", kind: .text, defaultValue: .none,
                    help:
                        "Serve Prometheus metrics at http://ADDRESS/metrics on a listener of its own: HOST:PORT, or PORT for 127.0.0.1."
                ),
                Setting(
                    name: "metrics-client-labels", kind: .flag, defaultValue: .on(server.metricsClientLabels),
                    help: "Label latchkey_tokens_issued_total with client_id too (one series per client)."),
                Setting(
                    name: "log-level", kind: .choice(["trace", "debug", "info", "notice", "warning", "error", "critical"]),
                    defaultValue: .text("info"), help: "The least severe log lines written."),
                Setting(
                    name: "log-format", kind: .choice(["json", "logfmt"]), defaultValue: .text("json"),
                    help: "Log lines on standard error as JSON objects or as logfmt."),
                Setting(
                    name: "access-log", kind: .flag, defaultValue: .on(false),
                    help: "Log one line per request: method, path (no query), status, duration, request id."),
            ]
        ),
    ]

    /// The setting called `name`.
    static func named(_ name: String) -> Setting? {
        all.lazy.flatMap(\.settings).first { $0.name == name }
    }
}

extension Setting {
    /// `latchkey serve --help`'s list of settings, from ``all``.
    static var helpText: String {
        var lines = [
            "Every setting is a flag (--NAME VALUE), an environment variable (LATCHKEY_NAME, upper case, - as _) "
                + "and a key of the configuration file (--config FILE or LATCHKEY_CONFIG: one JSON object of "
                + "\"NAME\": value). A flag wins over a variable, a variable over the file, the file over the default. "
                + "--print-config shows the result, secrets redacted; a bad value stops serve with exit code 2."
        ]
        for (section, settings) in all {
            lines.append("")
            lines.append("\(section):")
            for setting in settings {
                let flag = setting.notAFlag ? "(no flag)" : "--\(setting.name)" + setting.kind.placeholder
                lines.append("  \(flag)")
                lines.append("      \(setting.help)\(setting.defaultValue.helpSuffix)")
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension Setting.Kind {
    fileprivate var placeholder: String {
        switch self {
        case .seconds: " <seconds>"
        case .count: " <n>"
        case .flag: ""
        case .text: " <text>"
        case .choice(let words): " <\(words.joined(separator: "|"))>"
        case .list: " <value> (repeatable)"
        }
    }
}

extension Setting.Default {
    fileprivate var helpSuffix: String {
        switch self {
        case .none, .list([]), .on(false): ""
        case .number(let value): " (default: \(value == value.rounded() ? String(Int(value)) : String(value)))"
        case .whole(let value): " (default: \(value))"
        case .on: " (default: on)"
        case .text(let value): " (default: \(value))"
        case .list(let values): " (default: \(values.joined(separator: ", ")))"
        }
    }
}
