import ArgumentParser
import LatchkeyServer

extension AccessTokenFormat: ExpressibleByArgument {}

struct ResourcesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resources",
        abstract: "Manage the protected resources (APIs, MCP servers) that tokens may be issued for (RFC 8707).",
        subcommands: [Add.self, List.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a resource by its URI.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The resource indicator: the URI clients send as `resource`, e.g. https://mcp.example.com/mcp.")
        var uri: String
        @Option(help: "The name the consent page shows.") var name: String
        @Option(help: "A scope tokens for this resource may carry (repeat for several).") var scope: [String] = []
        @Option(help: "opaque (checked by introspection, revocable at once) or jwt (RFC 9068, checked locally).")
        var tokenFormat: AccessTokenFormat = .opaque
        @Option(help: "Access-token lifetime in seconds (default: the client's for opaque, 300 for jwt).")
        var accessTokenLifetime: Int?
        @Option(help: "What signs its JWT access tokens: RS256 (every resource server takes it) or ES256 (far cheaper).")
        var tokenSigningAlg = "RS256"

        func run() async throws {
            let resource: ProtectedResource
            guard let algorithm = SigningAlgorithm(rawValue: tokenSigningAlg.uppercased()) else {
                throw fail("--token-signing-alg must be RS256 or ES256, not \(tokenSigningAlg).")
            }
            do {
                resource = try await store.administration().addResource(
                    ResourceRegistration(
                        uri: uri, name: name, scopes: scope, tokenFormat: tokenFormat, accessTokenLifetime: accessTokenLifetime,
                        tokenSigningAlgorithm: algorithm))
            } catch let error as AdministrationError {
                throw fail(error.description)
            }
            if output.json {
                try output.printJSON(ResourcesCommand.json(resource))
            } else {
                print("Registered resource \(resource.uri) (\(resource.tokenFormat.rawValue) access tokens).")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered resources.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let resources = try await store.openStore().resources()
            if output.json {
                try output.printJSON(["resources": resources.map(ResourcesCommand.json)])
            } else if resources.isEmpty {
                print("No resources registered: latchkey resources add URI --name N --scope S adds one.")
            } else {
                for resource in resources {
                    print("\(resource.uri)  \(resource.name)  [\(resource.scopes)]  \(resource.tokenFormat.rawValue)")
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a resource; tokens already issued for it last until they expire.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions
        @Argument var uri: String

        func run() async throws {
            do { try await store.administration().deleteResource(uri: uri) } catch let error as AdministrationError {
                throw fail(error.description)
            }
            if output.json { try output.printJSON(["deleted": uri]) } else { print("Deleted resource \(uri).") }
        }
    }

    static func json(_ resource: ProtectedResource) -> [String: Any?] {
        [
            "resource": resource.uri, "name": resource.name, "scopes": resource.scopes.names,
            "token_format": resource.tokenFormat.rawValue, "access_token_lifetime": resource.accessTokenLifetime,
            "access_token_signing_alg": resource.tokenFormat == .jwt ? resource.tokenSigningAlgorithm.rawValue : nil,
        ]
    }
}
