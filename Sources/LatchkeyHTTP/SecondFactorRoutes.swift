import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The second factors' pages (docs/accounts.md, "Second factors"): the second step of sign-in
/// (`/login/second-factor`, field `code`), the account's security page and the set-up of an
/// authenticator app (the key in `#totp-secret`, confirmed with field `code`).
struct SecondFactorRoutes: Sendable {
    let server: AuthorizationServer
    let accountRoutes: AccountRoutes
    var browser: BrowserRoutes { accountRoutes.browser }
    var pages: PageRenderer { browser.pages }
    var factors: SecondFactors { server.secondFactors }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/login/second-factor") { request, _ in try await secondStepForm(request) }
        router.post("/login/second-factor") { request, context in
            try await secondStep(request, clientAddress: context.clientAddress)
        }
        router.get("/account/security") { request, _ in
            let context = try await browser.session(request)
            guard let user = try await server.sessions.signedInUser(context.session) else {
                return HTTPResponses.redirect("/login", cookies: accountRoutes.cookies(context))
            }
            return HTTPResponses.html(
                pages.securityPage(user: user, summary: try await factors.summary(of: user)),
                cookies: accountRoutes.cookies(context))
        }
        router.get("/account/security/totp") { request, _ in try await setUpForm(request) }
        router.post("/account/security/totp") { request, context in
            try await accountRoutes.submit(request) { form, session in
                let outcome = try await factors.confirm(form, session: session, clientAddress: context.clientAddress)
                // Set up on the way into the console: back there (only ever a path under /admin).
                if case .recoveryCodes(let codes, let fresh, _) = outcome, form["request"] == nil, let console = form["next"] {
                    return .recoveryCodes(codes, session: fresh, next: ConsoleRoutes.consolePath(console))
                }
                return outcome
            } again: { form, user, session in
                guard let user, let id = form["factor"],
                    let enrolment = try await factors.enrolment(SecondFactorID(rawValue: id), of: user)
                else { return nil }
                return .setUpTOTP(
                    enrolment, requestID: form["request"], next: form["next"].map(ConsoleRoutes.consolePath),
                    needsPassword: factors.setUpNeedsPassword(session))
            }
        }
        router.get("/account/security/recovery-codes") { request, _ in
            try await accountRoutes.showSignedIn(request) { _, _ in Self.renewForm }
        }
        router.post("/account/security/recovery-codes") { request, context in
            try await accountRoutes.submit(request) { form, session in
                try await factors.renewRecoveryCodes(form, session: session, clientAddress: context.clientAddress)
            } again: { _, _, _ in
                Self.renewForm
            }
        }
        router.get("/account/security/remove") { request, _ in
            try await accountRoutes.showSignedIn(request) { _, _ in Self.removeForm }
        }
        router.post("/account/security/remove") { request, context in
            try await accountRoutes.submit(request) { form, session in
                try await factors.remove(form, session: session, clientAddress: context.clientAddress)
            } again: { _, _, _ in
                Self.removeForm
            }
        }
    }

    static let renewForm = AccountForm.confirmWithPassword(
        "/account/security/recovery-codes", heading: "New recovery codes",
        intro: "Ten new codes replace the old ones, which stop working. Type your password to confirm.",
        submit: "Get new codes")
    static let removeForm = AccountForm.confirmWithPassword(
        "/account/security/remove", heading: "Turn off two-step sign-in",
        intro: "Your password alone will sign you in. Your authenticator app and recovery codes stop working.",
        submit: "Turn it off", danger: true)

    /// The routes' paths and methods, for ``RouteTable``.
    static let routes: [String: RouteTable.Route] = [
        "/login/second-factor", "/account/security/totp", "/account/security/recovery-codes", "/account/security/remove",
    ].reduce(into: ["/account/security": RouteTable.Route(allow: "GET, HEAD", isPage: true)]) {
        $0[$1] = RouteTable.Route(allow: "GET, HEAD, POST", isPage: true)
    }

    /// `GET /login/second-factor[?request=…|?next=…]`: the code form, for a session that owes its
    /// second step or must step up; anyone else goes to the sign-in page.
    func secondStepForm(_ request: Request) async throws -> Response {
        let context = try await browser.session(request)
        let query = (try? FormBody.query(request).get()) ?? FormParameters([])
        guard try await factors.secondStepUser(context.session) != nil else {
            return HTTPResponses.redirect(
                "/login" + (query["request"].map { "?request=" + FormParameters.percentEncode($0) } ?? ""),
                cookies: accountRoutes.cookies(context))
        }
        let form = AccountForm.secondStep(
            requestID: query["request"], next: query["next"].map(ConsoleRoutes.consolePath), site: factors.siteName)
        return HTTPResponses.html(
            pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: accountRoutes.cookies(context))
    }

    /// `POST /login/second-factor`.
    func secondStep(_ request: Request, clientAddress: String) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return browser.errorPage(error)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        let cookies = accountRoutes.cookies(context)
        func again(_ message: String, _ pendingID: String?, status: HTTPResponse.Status) -> Response {
            var page = AccountForm.secondStep(
                requestID: pendingID, next: form["next"].map(ConsoleRoutes.consolePath), site: factors.siteName)
            page.error = message
            page.errorField = "code"
            return HTTPResponses.html(
                pages.accountFormPage(page, csrfToken: context.session.csrfToken), status: status, cookies: cookies)
        }
        switch try await factors.verify(form, session: context.session, clientAddress: clientAddress) {
        case .forbidden:
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Request refused",
                    message: "This form has expired or did not come from this site. Sign in again."),
                status: .forbidden, cookies: cookies)
        case .expired(let pendingID):
            return HTTPResponses.redirect(
                "/login" + (pendingID.map { "?request=" + FormParameters.percentEncode($0) } ?? ""), cookies: cookies)
        case .failed(let pendingID):
            return again(
                "That code is not right, or it was used already. Enter the code the app shows now.", pendingID,
                status: .unauthorized)
        case .throttled(let pendingID, let retryAfter):
            let minutes = (retryAfter + 59) / 60
            var response = again(
                "Too many wrong codes. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").", pendingID,
                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .signedIn(let fresh, let pendingID):
            let next =
                pendingID.map { "/consent?request=" + FormParameters.percentEncode($0) }
                ?? form["next"].map(ConsoleRoutes.consolePath) ?? "/account"
            return HTTPResponses.redirect(next, cookies: fresh.newCookie.map { [browser.sessionCookie($0)] } ?? [])
        }
    }

    /// `GET /account/security/totp[?request=…|?next=…]`: a new key, unconfirmed until its first code.
    func setUpForm(_ request: Request) async throws -> Response {
        let context = try await browser.session(request)
        let query = (try? FormBody.query(request).get()) ?? FormParameters([])
        guard let user = try await server.sessions.signedInUser(context.session) else {
            return HTTPResponses.redirect(
                "/login" + (query["request"].map { "?request=" + FormParameters.percentEncode($0) } ?? ""),
                cookies: accountRoutes.cookies(context))
        }
        let form = AccountForm.setUpTOTP(
            try await factors.beginTOTP(for: user), requestID: query["request"],
            next: query["next"].map(ConsoleRoutes.consolePath), needsPassword: factors.setUpNeedsPassword(context.session))
        return HTTPResponses.html(
            pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: accountRoutes.cookies(context))
    }
}
