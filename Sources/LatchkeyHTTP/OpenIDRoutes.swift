import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// OpenID Connect's own endpoints: discovery, the key set and RP-initiated logout.
struct OpenIDRoutes: Sendable {
    let server: AuthorizationServer
    let browser: BrowserRoutes
    let api: APIRoutes
    let pages = PageRenderer()

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/.well-known/openid-configuration") { _, _ in try await api.metadata() }
        router.get("/oauth2/jwks") { _, _ in try await keySet() }
        router.get("/oauth2/logout") { request, _ in try await logout(request, parameters: FormBody.query(request)) }
        router.post("/oauth2/logout") { request, _ in try await logout(request, parameters: await FormBody.read(request)) }
    }

    /// `GET /oauth2/jwks` (RFC 7517 §5): every published key, cacheable for a minute, so that a relying
    /// party that meets an unknown `kid` and fetches again finds it.
    func keySet() async throws -> Response {
        var response = HTTPResponses.json(try await server.signingKeys.publishedKeySet(at: server.configuration.now()))
        response.headers[.contentType] = "application/jwk-set+json"
        // Short, so that after an emergency rotation (no lead time) a refetch soon finds the new key.
        response.headers[.cacheControl] = "max-age=60"
        response.headers[.pragma] = nil
        return response
    }

    /// `GET` / `POST /oauth2/logout` (OpenID Connect RP-Initiated Logout 1.0).
    func logout(_ request: Request, parameters: Result<FormParameters, OAuthError>) async throws -> Response {
        let context = try await browser.session(request)
        // No new session cookie from here: a logout POSTed from another site comes without the
        // browser's SameSite=Lax cookie, and answering with a fresh one would displace it.
        let cookies: [Cookie] = []
        let form: FormParameters
        switch parameters {
        case .failure(let error): return browser.errorPage(error, cookies: cookies)
        case .success(let value): form = value
        }
        switch try await server.logout.logout(form, session: context.session) {
        case .errorPage(let error):
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "This sign-out request cannot continue", message: error.errorDescription ?? error.code.rawValue,
                    code: error.code.rawValue,
                    advice: "The app that sent you here asked to be sent back somewhere Latchkey does not know for it, "
                        + "so you were not signed out and not sent anywhere. You can close this page."),
                status: .badRequest, cookies: cookies)
        case .forbidden(let message):
            return HTTPResponses.html(
                pages.messagePage(heading: "Request refused", message: message), status: .forbidden, cookies: cookies)
        case .confirm(let confirmation):
            return HTTPResponses.html(pages.logoutConfirmationPage(confirmation), cookies: cookies)
        case .stayedSignedIn:
            return HTTPResponses.html(
                pages.messagePage(heading: "You are still signed in", message: "Nothing changed.", isError: false),
                cookies: cookies)
        case .signedOut(let redirect, let clientName, let ended):
            // Only an ended session's cookie is cleared. A request without one (a cross-site POST
            // carries no SameSite=Lax cookie) gets no cookie at all, so it cannot displace the
            // browser's real session.
            let cleared = ended ? [browser.sessionCookie("", maxAge: 0)] : []
            if let redirect { return HTTPResponses.redirect(redirect, cookies: cleared) }
            let back = clientName.map { " You can go back to \($0)." } ?? ""
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "You are signed out", message: "Your Latchkey session has ended." + back, isError: false),
                cookies: cleared)
        }
    }
}
