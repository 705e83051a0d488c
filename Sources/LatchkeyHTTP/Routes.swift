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
        router.get("/oauth2/token") { _, _ in api.methodNotAllowed() }
        router.post("/oauth2/revoke") { request, _ in await api.revoke(request) }
        router.post("/oauth2/introspect") { request, _ in await api.introspect(request) }
        router.get("/userinfo") { request, _ in try await api.userInfo(request) }
        router.get("/account") { request, _ in try await browser.account(request) }
        router.post("/account/revoke") { request, _ in try await browser.disconnect(request) }
        return router
    }
}

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
