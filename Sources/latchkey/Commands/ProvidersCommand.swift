import ArgumentParser
import Foundation
import LatchkeyClient
import LatchkeyServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension IdentityProviderKind: ExpressibleByArgument {}

/// `latchkey providers`: the upstream identity providers people may sign in through
/// (docs/accounts.md, "Upstream identity providers").
struct ProvidersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "providers",
        abstract: "Manage the upstream identity providers (OpenID Connect or OAuth 2.0) people may sign in through.",
        subcommands: [Add.self, List.self, Show.self, Enable.self, Disable.self, Assertions.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a provider. Register Latchkey there first, with the redirect URI ISSUER/federation/NAME/callback.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Its name here: 1 to 32 of a-z, 0-9 and -; in its paths and in idp_hint.") var name: String
        @Option(help: "Its issuer identifier (an OpenID provider's is discovered from it).") var issuer: String?
        @Option(help: "Latchkey's client id there.") var clientID: String
        @Flag(help: "Read Latchkey's client secret there from stdin's first line (also LATCHKEY_PROVIDER_CLIENT_SECRET).")
        var clientSecretStdin = false
        @Option(help: "A file holding Latchkey's client secret there.") var clientSecretFile: String?
        @Option(help: "What the sign-in page calls it (\"Continue with …\"); default its name.") var displayName: String?
        @Option(help: "oidc (OpenID Connect, default) or oauth2 (plain OAuth 2.0 with explicit endpoints).")
        var kind: IdentityProviderKind = .openIDConnect
        @Option(help: "A scope to ask for (repeat; default openid profile email for oidc).") var scope: [String] = []
        @Flag(inversion: .prefixedNo, help: "Whether a first sign-in creates an account here.") var createAccounts = true
        @Option(help: "Create accounts only for verified addresses in this domain (repeat).") var allowedEmailDomain: [String] =
            []
        @Flag(help: "Link a first sign-in to the account with the same confirmed address, when the provider verified it.")
        var linkVerifiedEmail = false
        @Flag(help: "Keep the account's name and address as the provider says at every sign-in.") var updateProfile = false
        @Flag(
            help:
                "Accept its signed assertions about its users at the token endpoint (JWT bearer and identity assertion grants; oidc only)."
        )
        var acceptAssertions = false
        @Option(help: "oauth2: the authorization endpoint.") var authorizationEndpoint: String?
        @Option(help: "oauth2: the token endpoint.") var tokenEndpoint: String?
        @Option(help: "oauth2: the userinfo endpoint, which says who signed in.") var userinfoEndpoint: String?
        @Option(help: "oauth2: the userinfo member holding the user's stable id (GitHub: id).") var subjectClaim = "sub"
        @Option(help: "oauth2: the member holding the address.") var emailClaim = "email"
        @Option(help: "oauth2: the member saying the address is verified.") var emailVerifiedClaim = "email_verified"
        @Option(help: "oauth2: the member holding the name.") var nameClaim = "name"
        @Option(help: "oauth2: the member holding a username (GitHub: login).") var usernameClaim = "preferred_username"

        func run() async throws {
            var registration = IdentityProviderRegistration(name: name, issuer: issuer, clientID: clientID)
            registration.clientSecret = try secret()
            registration.displayName = displayName
            registration.kind = kind
            registration.scope = scope
            registration.createsAccounts = createAccounts
            registration.allowedEmailDomains = allowedEmailDomain
            registration.linksVerifiedEmail = linkVerifiedEmail
            registration.updatesProfile = updateProfile
            registration.acceptsAssertions = acceptAssertions
            registration.authorizationEndpoint = authorizationEndpoint
            registration.tokenEndpoint = tokenEndpoint
            registration.userinfoEndpoint = userinfoEndpoint
            registration.claims.subject = subjectClaim
            registration.claims.email = emailClaim
            registration.claims.emailVerified = emailVerifiedClaim
            registration.claims.name = nameClaim
            registration.claims.username = usernameClaim
            // An OpenID provider that cannot be discovered now would fail every sign-in: say so here.
            if kind == .openIDConnect, let issuer {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.timeoutIntervalForRequest = 10
                do {
                    _ = try await ProviderConfiguration.discover(
                        issuer: issuer, session: URLSession(configuration: configuration))
                } catch {
                    throw fail("\(issuer) could not be discovered: \(error)")
                }
            }
            let provider: IdentityProvider
            do {
                provider = try await store.administration().addIdentityProvider(
                    registration, keyEncryptionKey: try await store.keyEncryptionKey())
            } catch let error as AdministrationError { throw fail(error.description) }
            let callback = try await ProvidersCommand.callback(name, store: store)
            if output.json {
                try output.printJSON(ProvidersCommand.json(provider, callback: callback))
            } else {
                print(
                    "Added \(provider.name) (\(provider.kind.rawValue)). Its redirect URI: \(callback ?? "ISSUER/federation/\(name)/callback")"
                )
            }
        }

        func secret() throws -> String? {
            if clientSecretStdin {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                    throw fail("No secret on standard input.")
                }
                return line
            }
            if let clientSecretFile {
                guard let text = try? String(contentsOfFile: clientSecretFile, encoding: .utf8) else {
                    throw fail("\(clientSecretFile) cannot be read.")
                }
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return ProcessInfo.processInfo.environment["LATCHKEY_PROVIDER_CLIENT_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the providers.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let providers = try await store.openStore().identityProviders()
            if output.json {
                var listed: [[String: Any?]] = []
                for provider in providers {
                    listed.append(
                        ProvidersCommand.json(
                            provider, callback: try await ProvidersCommand.callback(provider.name, store: store)))
                }
                try output.printJSON(["providers": listed.map { $0.mapValues { $0 ?? NSNull() } }])
            } else if providers.isEmpty {
                print("No providers: latchkey providers add NAME --issuer URL --client-id ID adds one.")
            } else {
                for provider in providers {
                    print(
                        "\(provider.name)  \(provider.displayName)  \(provider.kind.rawValue)  \(provider.issuer ?? "-")  "
                            + (provider.enabled ? "enabled" : "disabled"))
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one provider (never its secret).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var name: String

        func run() async throws {
            guard let provider = try await store.openStore().identityProvider(name: name) else {
                throw fail("There is no provider named \(name).")
            }
            let object = ProvidersCommand.json(provider, callback: try await ProvidersCommand.callback(name, store: store))
            if output.json {
                try output.printJSON(object)
            } else {
                for (key, value) in object.sorted(by: { $0.key < $1.key }) { print("\(key): \(value.map { "\($0)" } ?? "-")") }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Offer a disabled provider again.")
        @OptionGroup var store: StoreOptions
        @Argument var name: String

        func run() async throws { try await ProvidersCommand.set(name, enabled: true, store: store) }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop offering a provider and end the sessions signed in through it; its links stay.")
        @OptionGroup var store: StoreOptions
        @Argument var name: String

        func run() async throws { try await ProvidersCommand.set(name, enabled: false, store: store) }
    }

    /// `enable` and `disable`.
    static func set(_ name: String, enabled: Bool, store: StoreOptions) async throws {
        do { try await store.administration().setIdentityProviderEnabled(name: name, enabled) } catch let error
            as AdministrationError
        { throw fail(error.description) }
        print("\(enabled ? "Enabled" : "Disabled") \(name).")
    }

    struct Assertions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Accept (on) or refuse (off) a provider's signed assertions about its users at the token endpoint (RFC 7523 §2.1, ID-JAG)."
        )
        @OptionGroup var store: StoreOptions
        @Argument var name: String
        @Argument(help: "on or off") var setting: String

        func run() async throws {
            guard setting == "on" || setting == "off" else { throw fail("The setting is on or off.") }
            do {
                try await store.administration().setIdentityProviderAcceptsAssertions(name: name, setting == "on")
            } catch let error as AdministrationError { throw fail(error.description) }
            print("\(name)'s assertions are \(setting == "on" ? "accepted" : "refused") at the token endpoint.")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a provider, its links and the sessions signed in through it.")
        @OptionGroup var store: StoreOptions
        @Argument var name: String

        func run() async throws {
            do { try await store.administration().deleteIdentityProvider(name: name) } catch let error as AdministrationError {
                throw fail(error.description)
            }
            print("Deleted \(name).")
        }
    }

    /// The redirect URI to register at the provider, under the issuer serve last ran with.
    static func callback(_ name: String, store: StoreOptions) async throws -> String? {
        try await store.openStore().serverFact(name: "issuer").map { $0 + "/federation/" + name + "/callback" }
    }

    /// The provider as the admin API's provider object has it (docs/openapi.yaml), never its secret.
    static func json(_ provider: IdentityProvider, callback: String?) -> [String: Any?] {
        [
            "name": provider.name, "display_name": provider.displayName, "kind": provider.kind.rawValue,
            "issuer": provider.issuer, "client_id": provider.clientID, "confidential": provider.sealedClientSecret != nil,
            "scopes": provider.scope.names, "enabled": provider.enabled, "creates_accounts": provider.createsAccounts,
            "allowed_email_domains": provider.allowedEmailDomains, "links_verified_email": provider.linksVerifiedEmail,
            "updates_profile": provider.updatesProfile, "callback": callback,
            "accepts_assertions": provider.acceptsAssertions,
            "created_at": Int(provider.createdAt.timeIntervalSince1970),
            "authorization_endpoint": provider.authorizationEndpoint, "token_endpoint": provider.tokenEndpoint,
            "userinfo_endpoint": provider.userinfoEndpoint,
            "claims": [
                "subject": provider.claims.subject, "email": provider.claims.email,
                "email_verified": provider.claims.emailVerified, "name": provider.claims.name,
                "username": provider.claims.username,
            ],
        ]
    }

}
