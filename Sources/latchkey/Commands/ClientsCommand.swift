import ArgumentParser
import Foundation
import LatchkeyCore
import LatchkeyServer

struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients", abstract: "Register and manage client applications.",
        subcommands: [Create.self, List.self, Show.self, Delete.self, RotateSecret.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a client. A web client's secret is printed once.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Option(
            help:
                "native (mobile/desktop app), browser (single-page app), web (server app with a secret) or service (client credentials)."
        )
        var type: String
        @Option(help: "The name users see on the consent page.") var name: String
        @Option(
            name: .customLong("redirect-uri"), help: "A redirect URI (repeatable). Loopback http://127.0.0.1/… matches any port.")
        var redirectURIs: [String] = []
        @Option(name: .customLong("scope"), help: "A scope the client may ask for (repeatable; default: profile).")
        var scopes: [String] = []
        @Option(name: .customLong("logo-uri"), help: "https URL of the app's logo.") var logoURI: String?
        @Option(help: "Markdown shown on the consent page.") var consentMarkdown: String?
        @Option(help: "File holding the consent Markdown.") var consentMarkdownFile: String?
        @Option(name: .customLong("privacy-policy-uri"), help: "https URL of the app's privacy policy.")
        var privacyPolicyURI: String?
        @Flag(help: "Let a browser client use the implicit grant (not recommended; RFC 9700 §2.1.2).")
        var allowImplicit = false
        @Option(help: "Make a personal app that only this user may authorize.") var owner: String?
        @Flag(help: "A first-party app: users are not asked for consent (it is recorded and shown on /account).")
        var firstParty = false
        @Option(help: "Seconds this client's access tokens live (default: the server's --access-token-lifetime).")
        var accessTokenLifetime: Int?
        @Option(help: "Seconds this client's refresh tokens live (default: the server's --refresh-token-lifetime).")
        var refreshTokenLifetime: Int?
        @Option(
            name: .customLong("id-token-signing-alg"),
            help: "How this client's ID tokens are signed: RS256 (default) or ES256 (id_token_signed_response_alg).")
        var idTokenSigningAlgorithm = "RS256"
        @Option(
            name: .customLong("post-logout-redirect-uri"),
            help: "Where OpenID Connect logout may send the browser back (repeatable; compared exactly).")
        var postLogoutRedirectURIs: [String] = []
        @Option(
            help:
                "A web app's https URL where logout tokens are posted when a session it has a grant from ends (OpenID Connect Back-Channel Logout)."
        )
        var backchannelLogoutURI: String?
        @Flag(help: "Refuse this app's authorization requests unless pushed to /oauth2/par first (RFC 9126).")
        var requirePushedAuthorizationRequests = false
        @Flag(help: "Let this app use the device authorization grant (RFC 8628): a code the user enters at /device.")
        var allowDeviceCode = false
        @Flag(
            help:
                "Let this web or service client exchange tokens it holds for tokens to other resources (RFC 8693 token exchange)."
        )
        var allowTokenExchange = false
        @Option(
            name: .customLong("grant-type"),
            help: "A grant this app may use beyond its type's (repeatable; RFC 7591 grant_types values, e.g. implicit).")
        var grantTypes: [String] = []
        @Option(
            help: ArgumentHelp(
                "How a web or service client proves itself at the token endpoint: client_secret_basic (a secret, the default) "
                    + "or private_key_jwt (signed assertions, RFC 7523; give --jwks-file or --jwks-uri).",
                valueName: "method"))
        var tokenEndpointAuthMethod: String?
        @Option(help: "A JSON Web Key Set file with the client's public keys (private_key_jwt).") var jwksFile: String?
        @Option(help: "An https URL where the client publishes its public keys (private_key_jwt).") var jwksURI: String?

        /// `--jwks-file` or `--jwks-uri`, checked against `--token-endpoint-auth-method`.
        func keys() throws -> ClientKeys? {
            var keys: ClientKeys?
            switch (jwksFile, jwksURI) {
            case (let file?, nil):
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw fail("Cannot read \(file) as UTF-8 text.")
                }
                keys = .jwks(text)
            case (nil, let address?): keys = .jwksURI(address)
            case (nil, nil): keys = nil
            case (_?, _?): throw fail("Give --jwks-file or --jwks-uri, not both.")
            }
            switch (tokenEndpointAuthMethod, keys) {
            case ("private_key_jwt", nil):
                throw fail("--token-endpoint-auth-method private_key_jwt needs --jwks-file or --jwks-uri.")
            case ("private_key_jwt", _?), (nil, _): return keys
            case ("client_secret_basic", nil), ("client_secret_post", nil), ("none", nil): return nil
            case (_, _?): throw fail("--jwks-file and --jwks-uri go with --token-endpoint-auth-method private_key_jwt.")
            default: throw fail("--token-endpoint-auth-method must be client_secret_basic or private_key_jwt.")
            }
        }

        func run() async throws {
            guard let clientType = ClientType(rawValue: type) else {
                throw fail("--type must be one of: native, browser, web, service.")
            }
            guard let algorithm = SigningAlgorithm(rawValue: idTokenSigningAlgorithm.uppercased()) else {
                throw fail("--id-token-signing-alg must be RS256 or ES256.")
            }
            if consentMarkdown != nil, consentMarkdownFile != nil {
                throw fail("Give --consent-markdown or --consent-markdown-file, not both.")
            }
            let keys = try keys()
            var markdown = consentMarkdown
            if let consentMarkdownFile {
                guard let text = try? String(contentsOfFile: consentMarkdownFile, encoding: .utf8) else {
                    throw fail("Cannot read \(consentMarkdownFile) as UTF-8 text.")
                }
                markdown = text
            }
            let registered: RegisteredClient
            do {
                registered = try await store.administration().registerClient(
                    type: clientType, name: name, redirectURIs: redirectURIs, scopes: scopes, logoURI: logoURI,
                    consentMarkdown: markdown, privacyPolicyURI: privacyPolicyURI, ownerUsername: owner,
                    allowImplicit: allowImplicit, firstParty: firstParty, accessTokenLifetime: accessTokenLifetime,
                    refreshTokenLifetime: refreshTokenLifetime, idTokenSigningAlgorithm: algorithm,
                    postLogoutRedirectURIs: postLogoutRedirectURIs,
                    requirePushedAuthorizationRequests: requirePushedAuthorizationRequests, allowDeviceCode: allowDeviceCode,
                    grantTypes: grantTypes.isEmpty && !allowTokenExchange
                        ? nil
                        : GrantRegistry.standard.defaultGrantTypes(for: clientType) + grantTypes
                            + (allowImplicit ? [GrantTypes.implicit] : [])
                            + (allowDeviceCode ? [GrantTypes.deviceCode] : [])
                            + (allowTokenExchange ? [GrantTypes.tokenExchange] : []),
                    keys: keys, backchannelLogoutURI: backchannelLogoutURI)
            } catch let error as AdministrationError { throw fail(error.description) }
            if output.json {
                var object = describe(registered.client)
                object["client_secret"] = .some(registered.secret)
                try output.printJSON(object)
            } else {
                print("Registered \(clientType.rawValue) client \"\(registered.client.name)\".")
                print("client_id:     \(registered.client.id)")
                if registered.client.keys != nil {
                    print("It authenticates with assertions signed by its keys (private_key_jwt); it has no secret.")
                }
                if let secret = registered.secret {
                    print("client_secret: \(secret)")
                    print("The secret is shown only now: Latchkey keeps only its hash. Store it in your server's secret store.")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered clients.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let clients = try await store.openStore().clients()
            if output.json {
                try output.printJSON(["clients": clients.map(describe)])
            } else if clients.isEmpty {
                print(
                    "No clients. Register one with: latchkey clients create --type native --name \"My App\" --redirect-uri http://127.0.0.1/callback"
                )
            } else {
                for client in clients {
                    print(
                        "\(client.id)  \(client.type.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0))  \(client.name)"
                            + (client.registration == .administrator ? "" : "  (\(client.registration.rawValue))"))
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one client.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The client_id.") var id: String

        func run() async throws {
            guard let client = try await store.openStore().client(id: ClientID(rawValue: id)) else {
                throw fail("There is no client \(id).")
            }
            if output.json {
                try output.printJSON(describe(client))
            } else {
                print("client_id:      \(client.id)")
                print("type:           \(client.type.rawValue)")
                print("name:           \(client.name)")
                print("redirect URIs:  \(client.redirectURIs.joined(separator: " "))")
                print("scopes:         \(client.scopes)")
                if let logo = client.logoURI { print("logo:           \(logo)") }
                if let policy = client.privacyPolicyURI { print("privacy policy: \(policy)") }
                if let markdown = client.consentMarkdown { print("consent text:   \(markdown)") }
                if client.firstParty { print("first party:    yes (no consent page)") }
                if client.requirePushedAuthorizationRequests { print("requests:       pushed only (RFC 9126)") }
                print("grants:         \(client.grantTypes.joined(separator: " "))")
                if let seconds = client.accessTokenLifetime { print("access tokens:  \(seconds) s") }
                if let seconds = client.refreshTokenLifetime { print("refresh tokens: \(seconds) s") }
                print("ID tokens:      \(client.idTokenSigningAlgorithm.rawValue)")
                print("authenticates:  \(client.tokenEndpointAuthMethod)")
                if let address = client.keys?.jwksURI { print("keys from:      \(address)") }
                if !client.postLogoutRedirectURIs.isEmpty {
                    print("after logout:   \(client.postLogoutRedirectURIs.joined(separator: " "))")
                }
            }
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret", abstract: "Give a web or service client a new secret; the old one stops working.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The client_id.") var id: String

        func run() async throws {
            let secret: String
            do { secret = try await store.administration().rotateSecret(clientID: id) } catch let error as AdministrationError {
                throw fail(error.description)
            }
            if output.json {
                try output.printJSON(["client_id": id, "client_secret": secret])
            } else {
                print("client_secret: \(secret)")
                print("The old secret no longer works. The new one is shown only now.")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a client and every grant and token it holds.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The client_id.") var id: String

        func run() async throws {
            guard try await store.administration().deleteClient(id: id) else { throw fail("There is no client \(id).") }
            if output.json { try output.printJSON(["deleted": id]) } else { print("Deleted client \(id).") }
        }
    }
}

func describe(_ client: Client) -> [String: Any?] {
    [
        "client_id": client.id.rawValue, "type": client.type.rawValue, "name": client.name, "redirect_uris": client.redirectURIs,
        "scopes": client.scopes.names, "logo_uri": client.logoURI, "privacy_policy_uri": client.privacyPolicyURI,
        "consent_markdown": client.consentMarkdown, "confidential": client.type.isConfidential,
        "owner_user_id": client.ownerUserID?.rawValue, "allow_implicit": client.allowImplicit, "first_party": client.firstParty,
        "access_token_lifetime": client.accessTokenLifetime, "refresh_token_lifetime": client.refreshTokenLifetime,
        "id_token_signed_response_alg": client.idTokenSigningAlgorithm.rawValue,
        "post_logout_redirect_uris": client.postLogoutRedirectURIs, "registration": client.registration.rawValue,
        "require_pushed_authorization_requests": client.requirePushedAuthorizationRequests,
        "allow_device_code": client.allowDeviceCode, "grant_types": client.grantTypes,
        "token_endpoint_auth_method": client.tokenEndpointAuthMethod, "jwks_uri": client.keys?.jwksURI,
        "backchannel_logout_uri": client.backchannelLogoutURI,
        "jwks": client.keys?.jwks.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) },
    ]
}
