import ArgumentParser
import Foundation
import Hummingbird
import LatchkeyResource
import LatchkeyResourceHummingbird

/// A small MCP server (Model Context Protocol, Streamable HTTP transport with plain JSON
/// answers) that only answers requests with an access token Latchkey issued for it.
@main
struct ExampleMCPServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey-example-mcp",
        abstract: "An example MCP server protected by Latchkey: tools echo and whoami at /mcp.")

    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on.") var port = 8090
    @Option(help: "Latchkey's issuer URL (as its metadata says).") var issuer = "http://127.0.0.1:8080"
    @Option(help: "This server's resource identifier (default: http://HOST:PORT/mcp).") var resource: String?
    @Option(help: "The scope a token needs to use the tools.") var scope = "mcp:tools"
    @Option(help: "Latchkey's key set (default: read from the issuer's metadata).") var jwksURI: String?
    @Option(help: "For opaque tokens: a service client's id at Latchkey, for introspection.")
    var introspectionClientID: String?
    @Option(help: "For opaque tokens: the introspection endpoint (default: ISSUER/oauth2/introspect).")
    var introspectionEndpoint: String?
    @Option(
        name: .customLong("acr-values"),
        help: "An acr the user's sign-in must have reached, such as urn:latchkey:acr:2 (repeat for several: any one will do).")
    var acrValues: [String] = []
    @Option(name: .customLong("max-age"), help: "The most seconds since the user signed in (the token's auth_time).")
    var maxAge: Int?

    func validate() throws {
        if let maxAge, maxAge < 0 { throw ValidationError("--max-age is a number of seconds, 0 or more.") }
    }

    func run() async throws {
        let resource = resource ?? "http://\(host):\(port)/mcp"
        var configuration = ResourceServerConfiguration(
            resource: resource, issuer: issuer, scopesSupported: [scope], resourceName: "Example MCP server",
            jwksURI: jwksURI.flatMap(URL.init(string:)))
        // A token whose sign-in falls short gets 401 insufficient_user_authentication (RFC 9470).
        configuration.requiredACRValues = acrValues
        configuration.maxAuthenticationAge = maxAge
        if let introspectionClientID {
            // The secret comes from the environment, never the command line (which others can read).
            guard let secret = ProcessInfo.processInfo.environment["LATCHKEY_INTROSPECTION_SECRET"],
                let endpoint = URL(string: introspectionEndpoint ?? issuer + "/oauth2/introspect")
            else {
                throw ValidationError("Set LATCHKEY_INTROSPECTION_SECRET to the introspection client's secret.")
            }
            configuration.introspection = IntrospectionCredentials(
                endpoint: endpoint, clientID: introspectionClientID, clientSecret: secret)
        }
        let validator = BearerTokenValidator(configuration: configuration)
        let router = Router(context: ResourceRequestContext.self)
        router.addProtectedResourceMetadata(configuration)
        let mcpPath = RouterPath(URLComponents(string: resource)?.path ?? "/mcp")
        router.group(mcpPath)
            .add(middleware: BearerTokenMiddleware(validator, requiredScopes: [scope]))
            .post { request, context in try await MCPEndpoint.answer(request, context: context) }
            .get { _, _ in Response(status: .methodNotAllowed, headers: [.allow: "POST"]) }
            .delete { _, _ in Response(status: .methodNotAllowed, headers: [.allow: "POST"]) }
        var banner = "MCP server at \(resource), protected by \(issuer)"
        if !acrValues.isEmpty { banner += ", for sign-ins with acr \(acrValues.joined(separator: " or "))" }
        if let maxAge { banner += ", at most \(maxAge) s old" }
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { [banner] _ in print(banner) })
        try await app.runService()
    }
}
