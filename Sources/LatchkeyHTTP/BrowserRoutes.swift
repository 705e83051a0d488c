import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The browser-facing half: authorization, login and consent pages (docs/design.md §3).
struct BrowserRoutes: Sendable {
    let server: AuthorizationServer
    let pages: PageRenderer

    init(server: AuthorizationServer) {
        self.server = server
        var pages = PageRenderer()
        pages.offersSignUp = server.configuration.signUp.mode == .open
        pages.offersReset = server.selfService.sendsMail
        pages.offersPasswords = server.configuration.passwordSignIn
        pages.offersPasskeys = server.secondFactors.passkeys.available
        self.pages = pages
    }

    var cookieName: String { server.configuration.usesHTTPS ? "__Host-lk_session" : "lk_session" }

    /// The session cookie: host-only, `HttpOnly`, `SameSite=Lax`, `Secure` over HTTPS (where its
    /// name takes the `__Host-` prefix).
    func sessionCookie(_ value: String, maxAge: Int? = nil) -> Cookie {
        Cookie(
            name: cookieName, value: value, maxAge: maxAge ?? Int(server.configuration.sessionLifetime), path: "/",
            secure: server.configuration.usesHTTPS, httpOnly: true, sameSite: .lax)
    }

    func session(_ request: Request) async throws -> SessionContext {
        // A HEAD request shows no form, so an anonymous session made for it would never be used.
        try await server.sessions.session(cookie: request.cookies[cookieName]?.value, store: request.method != .head)
    }

    /// `GET /oauth2/authorize`.
    func authorize(_ request: Request) async throws -> Response {
        let parameters: FormParameters
        switch FormBody.query(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): parameters = value
        }
        let context = try await session(request)
        return try await render(try await server.authorization.authorize(parameters, session: context.session), context)
    }

    /// `GET /consent?request=…`.
    func resume(_ request: Request) async throws -> Response {
        let context = try await session(request)
        guard case .success(let query) = FormBody.query(request), let id = query["request"] else {
            return errorPage(.invalidRequest("The request parameter is missing."))
        }
        return try await render(try await server.authorization.resume(pendingID: id, session: context.session), context)
    }

    /// `POST /oauth2/authorize`: the consent page's decision (it carries `decision`), or else an
    /// authorization request sent as a form (OpenID Connect Core §3.1.2.1 allows POST as well as GET).
    func authorizeOrDecide(_ request: Request) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): form = value
        }
        let context = try await session(request)
        if form["decision"] == nil, form["csrf_token"] == nil {
            return try await render(try await server.authorization.authorize(form, session: context.session), context)
        }
        return try await render(try await server.authorization.decide(form, session: context.session), context)
    }

    /// `GET /login`.
    func loginForm(_ request: Request) async throws -> Response {
        let context = try await session(request)
        let query = try? FormBody.query(request).get()
        let requestID = query?["request"]
        // Signed in already: on with the request, unless it asked for a new sign-in (`again`).
        if context.session.userID != nil, let requestID, query?["again"] == nil {
            return HTTPResponses.redirect("/consent?request=" + FormParameters.percentEncode(requestID))
        }
        let next = query?["next"].map(ConsoleRoutes.consolePath)
        return try await signInPage(
            context, requestID: requestID, username: query?["login_hint"], next: next, fresh: query?["again"] != nil,
            cookies: context.newCookie.map { [sessionCookie($0)] } ?? [])
    }

    /// The sign-in page for `requestID` or the console page `next`, with the upstream providers
    /// people may sign in through and, after a failed attempt, its `error`; its passkey button's
    /// script allowed where it has one.
    /// - Parameter fresh: the request asked for a new sign-in (`prompt=login`, `max_age`), which
    ///   the providers are asked for too.
    func signInPage(
        _ context: SessionContext, requestID: String?, error: String? = nil, username: String?, next: String?,
        fresh: Bool = false, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []
    ) async throws -> Response {
        let providers = try await server.federation.enabledProviders().map { provider in
            PageRenderer.ProviderLink(
                displayName: provider.displayName,
                href: FederationRoutes.startPath(provider.name, requestID: requestID, next: next, fresh: fresh))
        }
        let body = pages.loginPage(
            csrfToken: context.session.csrfToken, requestID: requestID, client: try await pendingClient(requestID),
            error: error, username: username, next: next, providers: providers)
        return pages.offersPasskeys
            ? HTTPResponses.htmlWithPasskeys(body, status: status, cookies: cookies)
            : HTTPResponses.html(body, status: status, cookies: cookies)
    }

    /// `POST /login`. `clientAddress` is the peer's IP address, for throttling.
    func login(_ request: Request, clientAddress: String) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): form = value
        }
        let context = try await session(request)
        let next = form["next"].map(ConsoleRoutes.consolePath)
        func again(_ error: String, _ pendingID: String?, _ status: HTTPResponse.Status) async throws -> Response {
            try await signInPage(
                context, requestID: pendingID, error: error, username: form["username"], next: next, status: status)
        }
        switch try await server.sessions.signIn(form, session: context.session, clientAddress: clientAddress) {
        case .forbidden(let message):
            return HTTPResponses.html(
                pages.messagePage(heading: "Request refused", message: message), status: .forbidden,
                cookies: context.newCookie.map { [sessionCookie($0)] } ?? [])
        case .failed(let pendingID):
            return try await again("The username or password is not right.", pendingID, .unauthorized)
        case .throttled(let pendingID, let retryAfter):
            let minutes = (retryAfter + 59) / 60
            var response = try await again(
                "Too many failed sign-ins for this account or from this network. "
                    + "Try again in \(minutes) minute\(minutes == 1 ? "" : "s").", pendingID, .tooManyRequests)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .busy(let pendingID, let retryAfter):
            var response = try await again(
                "Latchkey is busy checking other sign-ins. Try again in a few seconds.", pendingID, .serviceUnavailable)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .disabled(let pendingID):
            return try await again(
                "This account is disabled. Ask the people who run this site to enable it.", pendingID, .forbidden)
        case .unverified(let pendingID, let userID):
            let notice = try await server.selfService.resendVerification(userID: userID, pendingRequestID: pendingID)
            return HTTPResponses.html(pages.noticePage(notice, isError: true), status: .forbidden)
        case .secondFactorNeeded(let fresh, let pendingID):
            return secondStep(fresh, pendingID: pendingID, next: next)
        case .signedIn(let fresh, let pendingID):
            return afterSignIn(fresh, pendingID: pendingID, next: next)
        }
    }

    /// Where a browser goes once its first factor was checked (a password, an upstream
    /// provider) for an account with a second factor: the second step, then on with the pending
    /// request or back to the console page `next`.
    func secondStep(_ fresh: SessionContext, pendingID: String?, next: String?) -> Response {
        var location = "/login/second-factor"
        if let pendingID {
            location += "?request=" + FormParameters.percentEncode(pendingID)
        } else if let next {
            location += "?next=" + FormParameters.percentEncode(next)
        }
        return HTTPResponses.redirect(location, cookies: fresh.newCookie.map { [sessionCookie($0)] } ?? [])
    }

    /// Where a browser goes once signed in (by password, second step or passkey), with its new
    /// session's cookie: on with the pending request, or back to the console page it came from
    /// (only ever a path under /admin), or to the account page.
    func afterSignIn(_ fresh: SessionContext, pendingID: String?, next: String?) -> Response {
        let location =
            pendingID.map { "/consent?request=" + FormParameters.percentEncode($0) } ?? next.map(ConsoleRoutes.consolePath)
            ?? "/account"
        return HTTPResponses.redirect(location, cookies: fresh.newCookie.map { [sessionCookie($0)] } ?? [])
    }

    /// `POST /logout`: ends the session (CSRF-checked) and clears the cookie.
    func logout(_ request: Request) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): form = value
        }
        let context = try await session(request)
        guard try await server.sessions.signOut(form, session: context.session) else {
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Request refused",
                    message: "This form has expired or did not come from this site. Reload the page and try again."),
                status: .forbidden, cookies: context.newCookie.map { [sessionCookie($0)] } ?? [])
        }
        return HTTPResponses.redirect("/login", cookies: [sessionCookie("", maxAge: 0)])
    }

    /// `GET /account`: the signed-in user's connected apps.
    func account(_ request: Request) async throws -> Response {
        let context = try await session(request)
        let cookies = context.newCookie.map { [sessionCookie($0)] } ?? []
        guard let user = try await server.sessions.signedInUser(context.session) else {
            return HTTPResponses.redirect("/login", cookies: cookies)
        }
        let apps = try await server.account.connectedApps(userID: user.id)
        return HTTPResponses.html(
            pages.accountPage(
                user: user, apps: apps, csrfToken: context.session.csrfToken,
                catalogue: try await server.scopeCatalogue()),
            cookies: cookies)
    }

    /// `POST /account/revoke`: disconnects one app.
    func disconnect(_ request: Request) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return errorPage(error)
        case .success(let value): form = value
        }
        let context = try await session(request)
        guard try await server.account.disconnect(form, session: context.session) else {
            return HTTPResponses.html(
                pages.messagePage(heading: "Request refused", message: "This form has expired or did not come from this site."),
                status: .forbidden)
        }
        return HTTPResponses.redirect("/account")
    }

    /// `GET /`: says who is signed in.
    func home(_ request: Request) async throws -> Response {
        let context = try await session(request)
        var text = "You are not signed in. Apps send you here to sign in and approve access."
        if let user = try await server.sessions.signedInUser(context.session) {
            text = "You are signed in as \(user.username)."
        }
        return HTTPResponses.html(
            pages.messagePage(heading: "Latchkey", message: text, isError: false),
            cookies: context.newCookie.map { [sessionCookie($0)] } ?? [])
    }

    private func pendingClient(_ pendingID: String?) async throws -> Client? {
        guard let pendingID else { return nil }
        return try await server.authorization.pendingClient(pendingID: pendingID)
    }

    func render(_ step: AuthorizationStep, _ context: SessionContext) async throws -> Response {
        let cookies = context.newCookie.map { [sessionCookie($0)] } ?? []
        switch step {
        case .errorPage(let error):
            return errorPage(error, cookies: cookies)
        case .forbidden(let message):
            return HTTPResponses.html(
                pages.messagePage(heading: "Request refused", message: message), status: .forbidden, cookies: cookies)
        case .redirect(let location):
            return HTTPResponses.redirect(location, cookies: cookies)
        case .formPost(let response):
            return HTTPResponses.formPost(pages.formPostPage(response), cookies: cookies)
        case .signIn(let pendingID, let loginHint, let again, let identityProvider):
            // `idp_hint`: straight to that provider, when it is one people may sign in through.
            if let identityProvider,
                try await server.federation.enabledProviders().contains(where: { $0.name == identityProvider })
            {
                return HTTPResponses.redirect(
                    FederationRoutes.startPath(identityProvider, requestID: pendingID, next: nil, fresh: again),
                    cookies: cookies)
            }
            var location = "/login?request=" + FormParameters.percentEncode(pendingID)
            if let loginHint { location += "&login_hint=" + FormParameters.percentEncode(loginHint) }
            if again { location += "&again=1" }
            return HTTPResponses.redirect(location, cookies: cookies)
        case .signUp(let pendingID):
            return HTTPResponses.redirect("/signup?request=" + FormParameters.percentEncode(pendingID), cookies: cookies)
        case .secondFactor(let pendingID):
            return HTTPResponses.redirect(
                "/login/second-factor?request=" + FormParameters.percentEncode(pendingID), cookies: cookies)
        case .setUpSecondFactor(let pendingID):
            return HTTPResponses.redirect(
                "/account/security/totp?request=" + FormParameters.percentEncode(pendingID), cookies: cookies)
        case .consent(let prompt):
            let username = try await server.sessions.signedInUser(context.session)?.username.rawValue
            return HTTPResponses.html(pages.consentPage(prompt, username: username ?? ""), cookies: cookies)
        }
    }

    func errorPage(_ error: OAuthError, cookies: [Cookie] = []) -> Response {
        HTTPResponses.html(
            pages.messagePage(
                heading: "This sign-in request cannot continue", message: error.errorDescription ?? error.code.rawValue,
                code: error.code.rawValue,
                advice: "The app that sent you here made a request Latchkey cannot safely continue, so nothing was shared "
                    + "with it. You can close this page and try again from the app; if it keeps happening, tell the app's makers."
            ),
            status: error == FormBody.tooLarge ? .contentTooLarge : .badRequest, cookies: cookies)
    }
}
