import ArgumentParser
import Foundation
import LatchkeyClient
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which issuer and client `latchkey token` uses: the last `latchkey login`.
struct LoginRecord: Codable {
    var issuer: String
    var clientID: String
    var provider: ProviderConfiguration
    /// Signed in with `--dpop`: the tokens are bound to ``dpopKeyURL``'s key.
    var dpop: Bool?

    var key: String { "\(issuer) \(clientID)" }

    static var url: URL { FileTokenStore.defaultURL().deletingLastPathComponent().appendingPathComponent("login.json") }

    /// The DPoP key of `latchkey login --dpop` and `latchkey proof`: a PEM file readable by this user only.
    static var dpopKeyURL: URL {
        FileTokenStore.defaultURL().deletingLastPathComponent().appendingPathComponent("dpop-key.pem")
    }

    /// The OAuth client for this login, with its DPoP key when it signed in with one (never a new
    /// key: the tokens are bound to that one).
    func client() throws -> OAuthClient {
        guard dpop == true else { return OAuthClient(provider: provider, clientID: clientID) }
        guard let key = try? DPoPKey.load(from: Self.dpopKeyURL) else {
            throw fail(
                "The DPoP key these tokens are bound to (\(Self.dpopKeyURL.path)) is gone. Sign in again: "
                    + "latchkey login --dpop --issuer \(issuer) --client-id \(clientID)")
        }
        return OAuthClient(provider: provider, clientID: clientID, dpop: key)
    }

    static func load() throws -> LoginRecord? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(LoginRecord.self, from: Data(contentsOf: url))
    }

    func save() throws {
        try FileManager.default.createDirectory(
            at: Self.url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try JSONEncoder().encode(self).write(to: Self.url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: Self.url.path)
    }
}

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract:
            "Sign in through the system browser (PKCE, loopback redirect), or with --device on another device, and keep the tokens.",
        discussion: """
            Register the client with the redirect URI http://127.0.0.1/callback: any port matches.
            The browser is $BROWSER if set, else xdg-open (Linux) or open (macOS). The URL is printed too,
            for a browser on another machine that can reach this one's loopback port through a tunnel.

            With --device (RFC 8628), no browser is opened here: a code and a QR code are printed, to be
            entered at the server's /device page on a phone or computer, and this command waits for it.
            The client must be registered for the device grant (latchkey clients create --allow-device-code).

            With --step-up-from URL, the command first sends GET URL with the token stored for this issuer
            and client. When the answer is 401 with an RFC 9470 step-up challenge
            (error="insufficient_user_authentication"), the sign-in asks for its acr_values and max_age;
            --acr-values and --max-age, when given, win over the challenge's.
            """)

    @Option(help: "The authorization server's issuer URL (its metadata is discovered).") var issuer: String
    @Option(name: .customLong("client-id"), help: "The registered native client's id.") var clientID: String
    @Option(help: "Space-separated scopes to ask for.") var scope = "profile"
    @Option(help: "Loopback port to listen on (default: any free port).") var port = 0
    @Option(name: .customLong("redirect-path"), help: "Path of the loopback redirect URI.") var redirectPath = "/callback"
    @Option(help: "Seconds to wait for the sign-in.") var timeout = 300
    @Option(help: "A resource (RFC 8707) the token is for, such as an MCP server's URL; repeat for several.")
    var resource: [String] = []
    @Flag(help: "Sign in on another device: print a code to enter there, and wait (RFC 8628).") var device = false
    @Flag(help: "Bind the tokens to a key kept in the config folder (DPoP, RFC 9449): a copied token is useless without it.")
    var dpop = false
    @Option(
        name: .customLong("acr-values"),
        help: "Space-separated authentication levels to ask for (acr_values), such as urn:latchkey:acr:2 for two factors.")
    var acrValues: String?
    @Option(
        name: .customLong("max-age"), help: "Sign in again unless the last sign-in is at most this many seconds old (max_age).")
    var maxAge: Int?
    @Option(
        name: .customLong("step-up-from"),
        help: "A resource URL to ask first with the stored token: ask for what its step-up challenge names (RFC 9470).")
    var stepUpFrom: String?

    func run() async throws {
        guard let requested = ScopeSet(parsing: scope) else { throw fail("--scope: scopes are separated by single spaces.") }
        if let bad = resource.first(where: { !ResourceSet.isValidIndicator($0) }) {
            throw fail(
                "--resource \(bad): a resource is an absolute https URI (http only on a loopback host), without a fragment.")
        }
        if let maxAge, maxAge < 0 { throw fail("--max-age is a number of seconds, 0 or more.") }
        var stepUpURL: URL?
        if let stepUpFrom {
            guard let url = URL(string: stepUpFrom), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw fail("--step-up-from \(stepUpFrom): give the http or https URL of a resource.")
            }
            stepUpURL = url
        }
        if device, acrValues != nil || maxAge != nil || stepUpURL != nil {
            throw fail("--acr-values, --max-age and --step-up-from go with the browser sign-in, not --device.")
        }
        do {
            let provider = try await ProviderConfiguration.discover(issuer: issuer)
            var acr = acrValues.map { $0.split(separator: " ").map(String.init) } ?? []
            var age = maxAge
            if let stepUpURL, let challenge = await stepUpChallenge(from: stepUpURL, provider: provider) {
                if acrValues == nil { acr = challenge.acrValues }
                if maxAge == nil { age = challenge.maxAge }
                say("Stepping up: \(stepUpURL.absoluteString) asks for \(challenge).")
            }
            let key = dpop ? try DPoPKey.loadOrCreate(at: LoginRecord.dpopKeyURL) : nil
            let client = OAuthClient(provider: provider, clientID: clientID, dpop: key)
            let extra = resource.map { ("resource", $0) }
            let tokens =
                device
                ? try await signInOnAnotherDevice(client, scope: requested.names, additionalParameters: extra)
                : try await client.signInWithLoopback(
                    scope: requested.names, userAgent: SystemBrowser(), port: port, path: redirectPath,
                    timeout: .seconds(timeout), additionalParameters: extra, acrValues: acr, maxAge: age
                ) { url in
                    say("Opening your browser to sign in. If it does not open, visit:\n\n  \(url.absoluteString)\n")
                }
            let record = LoginRecord(
                issuer: provider.issuer ?? issuer, clientID: clientID, provider: provider,
                dpop: tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame ? true : nil)
            let tokenStore = FileTokenStore(url: FileTokenStore.defaultURL())
            try await tokenStore.save(tokens, key: record.key)
            try record.save()

            var who = tokens.userID.map { "user_id \($0)" } ?? "an unnamed user"
            // The verified ID token says who signed in; failing that, the userinfo endpoint.
            if let identity = tokens.identity {
                who = "sub \(identity.subject), from a verified ID token"
            }
            if tokens.scope.contains("profile") || tokens.scope.contains("openid"), provider.userinfoEndpoint != nil,
                let username = try? await AuthorizedClient(client: client, store: tokenStore, key: record.key, tokens: tokens)
                    .userInfo().username
            {
                who = "\(username) (\(who))"
            }
            say("Signed in to \(record.issuer) as \(who).")
            say("Granted scopes: \(tokens.scope.isEmpty ? "none" : tokens.scope.description)")
            if let key, record.dpop == true {
                say("The tokens are bound to the DPoP key in \(LoginRecord.dpopKeyURL.path) (jkt \(key.thumbprint)).")
            } else if dpop {
                say("Note: the server did not bind the tokens to the DPoP key (token_type \(tokens.tokenType)).")
            }
            let missing = requested.names.filter { !tokens.scope.contains($0) }
            if !missing.isEmpty {
                say(
                    "Note: you asked for \(requested) but \(missing.joined(separator: " ")) \(missing.count == 1 ? "was" : "were") not granted."
                )
            }
            say("Tokens saved in \(FileTokenStore.defaultURL().path). Print an access token with: latchkey token")
        } catch let error as ClientError {
            throw fail(error.description)
        }
    }
}

extension LoginCommand {
    /// `--step-up-from`: sends `GET url` with the tokens stored for this issuer and client (a
    /// DPoP-bound one with a proof by the stored key), and returns the RFC 9470 challenge the
    /// resource answers with, if it does. Without stored tokens, or with any other answer, there
    /// is nothing to step up from: the sign-in goes on as asked.
    func stepUpChallenge(from url: URL, provider: ProviderConfiguration) async -> StepUpChallenge? {
        let record = LoginRecord(issuer: provider.issuer ?? issuer, clientID: clientID, provider: provider)
        let store = FileTokenStore(url: FileTokenStore.defaultURL())
        guard let stored = try? await store.load(key: record.key) else {
            say("No stored token for \(record.issuer) and \(clientID) to try at \(url.absoluteString); signing in as asked.")
            return nil
        }
        let bound = stored.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame
        let key = bound ? try? DPoPKey.load(from: LoginRecord.dpopKeyURL) : nil
        let client = OAuthClient(provider: provider, clientID: clientID, dpop: key)
        do {
            let (_, response) = try await AuthorizedClient(client: client, store: store, key: record.key, tokens: stored)
                .send(URLRequest(url: url))
            say("\(url.absoluteString) answered \(response.statusCode) without a step-up challenge; signing in as asked.")
        } catch ClientError.insufficientUserAuthentication(let challenge) {
            return challenge
        } catch {
            say("Could not ask \(url.absoluteString) (\(error)); signing in as asked.")
        }
        return nil
    }

    /// The device authorization grant: shows where to go and the code, with a QR code of the
    /// page with the code filled in, then polls until the user has decided or the code expires.
    func signInOnAnotherDevice(_ client: OAuthClient, scope: [String], additionalParameters: [(String, String)])
        async throws -> TokenSet
    {
        let authorization = try await client.requestDeviceAuthorization(
            scope: scope, additionalParameters: additionalParameters)
        var lines = ["On a phone or computer, visit:", "", "  \(authorization.verificationURI.absoluteString)", ""]
        lines += ["and enter the code:", "", "  \(authorization.userCode)", ""]
        if let complete = authorization.verificationURIComplete, let qr = try? QRCode(encoding: complete.absoluteString) {
            lines += ["Or scan this with the phone's camera (it opens \(complete.absoluteString)):", "", qr.terminalText, ""]
        }
        let minutes = max(1, Int(authorization.expiresAt.timeIntervalSinceNow / 60))
        lines.append("Waiting for you to sign in there (the code works for \(minutes) minute\(minutes == 1 ? "" : "s"))…")
        say(lines.joined(separator: "\n"))
        // --timeout bounds the wait here too, when it is shorter than the code's life.
        let deadline = Date().addingTimeInterval(TimeInterval(timeout))
        return try await client.pollForTokens(authorization, requestedScope: scope) { interval in
            guard Date().addingTimeInterval(Double(interval.components.seconds)) < deadline else {
                throw ClientError.timedOut
            }
            try await Task.sleep(for: interval)
        }
    }
}

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token from the last latchkey login, refreshing it when needed.",
        discussion: "For scripts: curl -H \"Authorization: Bearer $(latchkey token)\" …")

    @Flag(help: "Refresh even if the access token is still valid.") var refresh = false
    @Flag(help: "Print a JSON object with the token, its expiry and scopes.") var json = false

    func run() async throws {
        guard let record = try LoginRecord.load() else {
            throw fail("Not signed in. Run: latchkey login --issuer URL --client-id ID")
        }
        let tokens: TokenSet
        do {
            tokens = try await Self.validTokens(record, forceRefresh: refresh)
        } catch let error as ClientError {
            throw fail(Self.message(for: error, record: record))
        }
        print(json ? try Self.json(tokens, issuer: record.issuer) : tokens.accessToken)
    }

    static func validTokens(_ record: LoginRecord, forceRefresh: Bool) async throws -> TokenSet {
        let client = AuthorizedClient(
            client: try record.client(), store: FileTokenStore(url: FileTokenStore.defaultURL()), key: record.key)
        return try await client.accessToken(forceRefresh: forceRefresh)
    }

    static func message(for error: ClientError, record: LoginRecord) -> String {
        guard error.requiresSignIn else { return error.description }
        return "\(error) Sign in again: latchkey login --issuer \(record.issuer) --client-id \(record.clientID)"
    }

    static func json(_ tokens: TokenSet, issuer: String) throws -> String {
        var object: [String: Any] = [
            "access_token": tokens.accessToken, "token_type": tokens.tokenType,
            "expires_at": Int(tokens.expiresAt.timeIntervalSince1970), "scope": tokens.scope.description, "issuer": issuer,
        ]
        object["user_id"] = tokens.userID ?? NSNull()
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
