import Foundation
import Hummingbird
import Logging
import NIOCore
import LatchkeyCore
import LatchkeyServer

/// Builds the router: path → endpoint, one line each (DESIGN §2).
public enum LatchkeyRoutes {
    public static func router(for server: AuthorizationServer) -> Router<LatchkeyRequestContext> {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: MethodMiddleware())
        router.add(middleware: StoreFailureMiddleware(logger: server.logger))
        let browser = BrowserRoutes(server: server)
        let api = APIRoutes(server: server)

        router.get("/healthz") { _, _ in HTTPResponses.json(#"{"status":"ok"}"#) }
        router.get("/.well-known/oauth-authorization-server") { _, _ in try await api.metadata() }
        router.get("/oauth2/authorize") { request, _ in try await browser.authorize(request) }
        router.post("/oauth2/authorize") { request, _ in try await browser.decide(request) }
        router.get("/consent") { request, _ in try await browser.resume(request) }
        router.get("/login") { request, _ in try await browser.loginForm(request) }
        router.post("/login") { request, context in try await browser.login(request, clientAddress: context.clientAddress) }
        router.post("/logout") { request, _ in try await browser.logout(request) }
        router.get("/") { request, _ in try await browser.home(request) }
        router.post("/oauth2/token") { request, _ in await api.token(request) }
        router.post("/oauth2/revoke") { request, _ in await api.revoke(request) }
        router.post("/oauth2/introspect") { request, _ in await api.introspect(request) }
        router.get("/userinfo") { request, _ in try await api.userInfo(request) }
        router.get("/account") { request, _ in try await browser.account(request) }
        router.post("/account/revoke") { request, _ in try await browser.disconnect(request) }
        return router
    }
}

/// HEAD answered as GET without the body (RFC 9110 §9.3.2), and a known path asked with another
/// method answered `405` with `Allow` and an RFC 6749 error body, instead of a bare 404.
struct MethodMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Built once (a generic type cannot hold a stored static), not on every request.
    static var allowed: [String: String] { allowedMethods }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if request.method == .head, Self.allowed[request.uri.path]?.contains("HEAD") == true {
            var head = request.head
            head.method = .get
            let response = try await next(Request(head: head, body: request.body), context)
            return Response(status: response.status, headers: response.headers, body: ResponseBody())
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allow = Self.allowed[request.uri.path] else { throw error }
            var response = HTTPResponses.tokenError(
                TokenEndpointError(.invalidRequest("This endpoint accepts \(allow) only.")))
            response.status = .methodNotAllowed
            response.headers[.allow] = allow
            return response
        }
    }
}

/// The methods each route answers, for ``MethodMiddleware``'s `Allow` header.
private let allowedMethods: [String: String] = [
    "/healthz": "GET, HEAD", "/.well-known/oauth-authorization-server": "GET, HEAD",
    "/oauth2/authorize": "GET, HEAD, POST", "/consent": "GET, HEAD", "/login": "GET, HEAD, POST", "/": "GET, HEAD",
    "/oauth2/token": "POST", "/oauth2/revoke": "POST", "/oauth2/introspect": "POST", "/userinfo": "GET, HEAD",
    "/account": "GET, HEAD", "/account/revoke": "POST", "/logout": "POST",
]

/// The request context: Hummingbird's basics plus the peer's address (for sign-in throttling).
/// Behind a reverse proxy this is the proxy's address; `X-Forwarded-For` is not trusted.
public struct LatchkeyRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The peer's IP address as text, or `unknown`.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}

/// Turns a store failure escaping a route into 503 `temporarily_unavailable` (SECURITY.md I5):
/// never a credential error, never a crash.
struct StoreFailureMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as StoreError {
            logger.error("store failure", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            let failure = TokenEndpointError(
                OAuthError(.temporarilyUnavailable, "The server cannot reach its store; try again shortly."))
            return HTTPResponses.tokenError(failure)
        }
    }
}
