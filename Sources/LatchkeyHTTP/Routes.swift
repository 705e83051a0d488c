import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import Logging
import NIOCore

/// Builds the router: path → endpoint, one line each (docs/design.md §2).
public enum LatchkeyRoutes {
    /// - Parameter options: with `recordsMetrics`, requests are counted and timed by route, method
    ///   and status (Hummingbird's `MetricsMiddleware`), for ``MetricsExporter``.
    public static func router(
        for server: AuthorizationServer, options: HTTPServingOptions = HTTPServingOptions()
    ) -> Router<LatchkeyRequestContext> {
        // HEAD is answered as GET without the body by Hummingbird itself (RFC 9110 §9.3.2).
        let router = Router(context: LatchkeyRequestContext.self, options: .autoGenerateHeadEndpoints)
        // Already checked by serve, which refuses a malformed range before listening.
        let proxies = (try? TrustedProxies(server.configuration.trustedProxies)) ?? TrustedProxies.none
        // Outermost, so that it records the status each response leaves with (405, 503 included).
        if options.recordsMetrics { router.add(middleware: MetricsMiddleware()) }
        router.add(
            middleware: RequestMiddleware(
                proxies: proxies, accessLog: options.accessLog ? Logger(label: "latchkey.access") : nil))
        let browser = BrowserRoutes(server: server)
        let api = APIRoutes(server: server)

        router.get("/healthz") { _, _ in HTTPResponses.json(#"{"status":"ok"}"#) }
        router.get("/readyz") { _, _ in await api.readiness() }
        router.get("/.well-known/oauth-authorization-server") { _, _ in try await api.metadata() }
        router.get("/oauth2/authorize") { request, _ in try await browser.authorize(request) }
        router.post("/oauth2/authorize") { request, _ in try await browser.authorizeOrDecide(request) }
        router.get("/consent") { request, _ in try await browser.resume(request) }
        router.get("/assets/form-post.js") { _, _ in
            var headers = HTTPResponses.browserHeaders
            headers[.contentType] = "text/javascript; charset=utf-8"
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: Templates.formPostScript)))
        }
        router.get("/login") { request, _ in try await browser.loginForm(request) }
        router.post("/login") { request, context in try await browser.login(request, clientAddress: context.clientAddress) }
        router.post("/logout") { request, _ in try await browser.logout(request) }
        router.get("/") { request, _ in try await browser.home(request) }
        router.post("/oauth2/token") { request, _ in await api.token(request) }
        router.post("/oauth2/par") { request, _ in await api.pushAuthorizationRequest(request) }
        router.post("/oauth2/device_authorization") { request, _ in await api.authorizeDevice(request) }
        router.get("/device") { request, _ in try await browser.deviceForm(request) }
        router.post("/device") { request, context in
            try await browser.enterUserCode(request, clientAddress: context.clientAddress)
        }
        router.post("/oauth2/revoke") { request, _ in await api.revoke(request) }
        router.post("/oauth2/introspect") { request, _ in await api.introspect(request) }
        router.get("/userinfo") { request, _ in try await api.userInfo(request) }
        router.post("/userinfo") { request, _ in try await api.userInfo(request) }
        router.get("/account") { request, _ in try await browser.account(request) }
        router.post("/account/revoke") { request, _ in try await browser.disconnect(request) }
        let accountRoutes = AccountRoutes(server: server, browser: browser)
        accountRoutes.register(on: router)
        SecondFactorRoutes(server: server, accountRoutes: accountRoutes).register(on: router)
        FederationRoutes(server: server, browser: browser).register(on: router)
        OpenIDRoutes(server: server, browser: browser, api: api).register(on: router)
        ConsoleRoutes(server: server, browser: browser).register(on: router)
        AdminAPIRoutes(server: server).register(on: router)
        RegistrationRoutes(server: server).register(on: router)
        return router
    }
}

/// What the middlewares need to know of each route.
enum RouteTable {
    struct Route {
        /// The methods answered, for `Allow`.
        var allow: String
        /// Whether a person's browser loads it, so that failures answer an HTML page.
        var isPage: Bool
    }

    static let routes: [String: Route] = [
        "/healthz": Route(allow: "GET, HEAD", isPage: false),
        "/readyz": Route(allow: "GET, HEAD", isPage: false),
        "/.well-known/oauth-authorization-server": Route(allow: "GET, HEAD", isPage: false),
        "/.well-known/openid-configuration": Route(allow: "GET, HEAD", isPage: false),
        "/oauth2/jwks": Route(allow: "GET, HEAD", isPage: false),
        "/oauth2/logout": Route(allow: "GET, HEAD, POST", isPage: true),
        "/oauth2/authorize": Route(allow: "GET, HEAD, POST", isPage: true),
        "/consent": Route(allow: "GET, HEAD", isPage: true),
        "/assets/form-post.js": Route(allow: "GET, HEAD", isPage: false),
        "/login": Route(allow: "GET, HEAD, POST", isPage: true),
        "/": Route(allow: "GET, HEAD", isPage: true),
        "/oauth2/token": Route(allow: "POST", isPage: false),
        "/oauth2/par": Route(allow: "POST", isPage: false),
        "/oauth2/device_authorization": Route(allow: "POST", isPage: false),
        "/device": Route(allow: "GET, HEAD, POST", isPage: true),
        "/oauth2/revoke": Route(allow: "POST", isPage: false),
        "/oauth2/introspect": Route(allow: "POST", isPage: false),
        "/userinfo": Route(allow: "GET, HEAD, POST", isPage: false),
        "/account": Route(allow: "GET, HEAD", isPage: true),
        "/account/revoke": Route(allow: "POST", isPage: true),
        "/logout": Route(allow: "POST", isPage: true),
        "/admin": Route(allow: "GET, HEAD", isPage: true),
        "/oauth2/register": Route(allow: "POST", isPage: false),
    ]

    /// The admin API's paths, `*` standing for one path segment (an id or a name).
    static let apiRoutes: [(pattern: [Substring], allow: String)] = [
        ("/admin/api/clients", "GET, HEAD, POST"), ("/admin/api/clients/*", "GET, HEAD, PUT, DELETE"),
        ("/admin/api/users", "GET, HEAD, POST"), ("/admin/api/users/*", "GET, HEAD, PATCH, DELETE"),
        ("/admin/api/scopes", "GET, HEAD, POST"), ("/admin/api/scopes/*", "DELETE"),
        ("/admin/api/grants", "GET, HEAD, DELETE"), ("/admin/api/resources", "GET, HEAD, POST, DELETE"),
        ("/admin/api/providers", "GET, HEAD, POST"), ("/admin/api/providers/*", "GET, HEAD, PATCH, DELETE"),
        ("/oauth2/register/*", "GET, HEAD, PUT, DELETE"),
    ].map { ($0.0.split(separator: "/"), $0.1) }

    /// The methods a known path answers, for `Allow`; `nil` for an unknown path.
    static func allow(_ path: String) -> String? {
        if let route = routes[path] ?? AccountRoutes.routes[path] ?? SecondFactorRoutes.routes[path] { return route.allow }
        if let allow = FederationRoutes.allow(path) { return allow }
        guard path.hasPrefix("/admin/api/") || path.hasPrefix("/oauth2/register/") else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        return apiRoutes.first { route in
            route.pattern.count == segments.count
                && zip(route.pattern, segments).allSatisfy { pattern, segment in
                    pattern == "*" ? !segment.isEmpty : pattern == segment
                }
        }?.allow
    }

    /// Whether a person's browser loads the path: a listed page, an upstream provider's, or any
    /// admin-console page.
    static func isPage(_ path: String) -> Bool {
        (routes[path] ?? AccountRoutes.routes[path] ?? SecondFactorRoutes.routes[path])?.isPage
            ?? ((path.hasPrefix("/admin/") && !path.hasPrefix("/admin/api/")) || path.hasPrefix("/federation/"))
    }
}

/// The request context: Hummingbird's basics plus the client's address (for throttling and the
/// audit log): the peer's, or behind a trusted proxy (`--trusted-proxy`) the one it forwarded.
public struct LatchkeyRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The client's IP address as text, or `unknown`; ``RequestMiddleware`` may replace it.
    var clientAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        clientAddress = remoteAddress?.ipAddress ?? "unknown"
    }
}
