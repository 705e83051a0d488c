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
    var passkeys: Passkeys { server.secondFactors.passkeys }

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
            let page = pages.securityPage(
                user: user, summary: try await factors.summary(of: user), csrfToken: context.session.csrfToken,
                passkeysAvailable: passkeys.available, federation: try await federationSummary(of: user))
            return passkeys.available
                ? HTTPResponses.htmlWithPasskeys(page, cookies: accountRoutes.cookies(context))
                : HTTPResponses.html(page, cookies: accountRoutes.cookies(context))
        }
        router.get("/assets/webauthn.js") { _, _ in
            var headers = HTTPResponses.browserHeaders
            headers[.contentType] = "text/javascript; charset=utf-8"
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: Templates.webAuthnScript)))
        }
        router.post("/webauthn/options") { request, _ in try await options(request) }
        router.post("/login/passkey") { request, context in
            try await passkeySignIn(request, clientAddress: context.clientAddress)
        }
        router.post("/account/security/passkeys") { request, context in
            try await accountRoutes.submit(request) { form, session in
                try await factors.addPasskey(form, session: session, clientAddress: context.clientAddress)
            }
        }
        router.get("/account/security/passkeys/remove") { request, _ in
            let credential = (try? FormBody.query(request).get())?["credential"] ?? ""
            return try await accountRoutes.showSignedIn(request) { user, _ in
                Self.removePasskeyForm(credential).asked(of: user, server.configuration)
            }
        }
        router.post("/account/security/passkeys/remove") { request, context in
            try await accountRoutes.submit(request) { form, session in
                try await factors.removePasskey(form, session: session, clientAddress: context.clientAddress)
            } again: { form, user, _ in
                Self.removePasskeyForm(form["credential_id"] ?? "").asked(of: user, server.configuration)
            }
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
                    needsPassword: try await factors.setUpNeedsPassword(session, user) && user.hasPassword)
            }
        }
        passwordForm(on: router, "/account/security/recovery-codes", Self.renewForm) { form, session, address in
            try await factors.renewRecoveryCodes(form, session: session, clientAddress: address)
        }
        passwordForm(on: router, "/account/security/remove", Self.removeForm) { form, session, address in
            try await factors.remove(form, session: session, clientAddress: address)
        }
    }

    /// A page that only asks for the password: `GET path` shows `form`, `POST path` runs `action`
    /// with the client's address and shows `form` again with what was wrong.
    func passwordForm(
        on router: Router<LatchkeyRequestContext>, _ path: RouterPath, _ form: AccountForm,
        _ action: @escaping @Sendable (FormParameters, BrowserSession, String) async throws -> SelfServiceOutcome
    ) {
        router.get(path) { request, _ in
            try await accountRoutes.showSignedIn(request) { user, _ in form.asked(of: user, server.configuration) }
        }
        router.post(path) { request, context in
            try await accountRoutes.submit(request) { fields, session in
                try await action(fields, session, context.clientAddress)
            } again: { _, user, _ in
                form.asked(of: user, server.configuration)
            }
        }
    }

    static func removePasskeyForm(_ credential: String) -> AccountForm {
        var form = AccountForm.confirmWithPassword(
            "/account/security/passkeys/remove", heading: "Remove a passkey",
            intro: "It will no longer sign in to your account. Type your password to confirm.", submit: "Remove the passkey",
            danger: true)
        form.hidden.append(("credential_id", credential))
        return form
    }

    static let renewForm = AccountForm.confirmWithPassword(
        "/account/security/recovery-codes", heading: "New recovery codes",
        intro: "Ten new codes replace the old ones, which stop working. Type your password to confirm.",
        submit: "Get new codes")
    static let removeForm = AccountForm.confirmWithPassword(
        "/account/security/remove", heading: "Turn off two-step sign-in",
        intro: "Your authenticator app and recovery codes stop working. Passkeys, if you added any, stay until you "
            + "remove them.",
        submit: "Turn it off", danger: true)

    /// The routes' paths and methods, for ``RouteTable``.
    static let routes: [String: RouteTable.Route] = [
        "/login/second-factor", "/account/security/totp", "/account/security/recovery-codes", "/account/security/remove",
        "/account/security/passkeys/remove",
    ].reduce(
        into: [
            "/account/security": RouteTable.Route(allow: "GET, HEAD", isPage: true),
            "/account/security/passkeys": RouteTable.Route(allow: "POST", isPage: true),
            "/login/passkey": RouteTable.Route(allow: "POST", isPage: true),
            "/webauthn/options": RouteTable.Route(allow: "POST", isPage: false),
            "/assets/webauthn.js": RouteTable.Route(allow: "GET, HEAD", isPage: false),
        ]
    ) {
        $0[$1] = RouteTable.Route(allow: "GET, HEAD, POST", isPage: true)
    }

    /// The account's links to upstream providers, and the enabled providers it has no link to.
    func federationSummary(of user: User) async throws -> PageRenderer.FederationSummary {
        let providers = try await server.store.identityProviders()
        let links = try await server.federation.links(of: user.id)
        return PageRenderer.FederationSummary(
            linked: links.map { link in (link, providers.first { $0.name == link.provider }) },
            unlinked: providers.filter { provider in provider.enabled && !links.contains { $0.provider == provider.name } })
    }

    /// `GET /login/second-factor[?request=…|?next=…]`: the code form, for a session that owes its
    /// second step or must step up; anyone else goes to the sign-in page.
    func secondStepForm(_ request: Request) async throws -> Response {
        let context = try await browser.session(request)
        let query = (try? FormBody.query(request).get()) ?? FormParameters([])
        guard let user = try await factors.secondStepUser(context.session) else {
            return HTTPResponses.redirect(
                "/login" + (query["request"].map { "?request=" + FormParameters.percentEncode($0) } ?? ""),
                cookies: accountRoutes.cookies(context))
        }
        let form = try await secondStepPage(
            user, requestID: query["request"], next: query["next"].map(ConsoleRoutes.consolePath))
        return secondStepResponse(form, context.session, cookies: accountRoutes.cookies(context))
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
        func again(_ message: String, _ pendingID: String?, status: HTTPResponse.Status) async throws -> Response {
            guard let user = try await factors.secondStepUser(context.session) else {
                return HTTPResponses.redirect("/login", cookies: cookies)
            }
            var page = try await secondStepPage(
                user, requestID: pendingID, next: form["next"].map(ConsoleRoutes.consolePath))
            page.error = message
            if page.hasForm { page.errorField = "code" }
            return secondStepResponse(page, context.session, status: status, cookies: cookies)
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
            return try await again(
                form["credential_id"] == nil
                    ? "That code is not right, or it was used already. Enter the code the app shows now."
                    : "That passkey could not be checked. Try again.", pendingID, status: .unauthorized)
        case .throttled(let pendingID, let retryAfter):
            let minutes = (retryAfter + 59) / 60
            var response = try await again(
                "Too many wrong codes. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").", pendingID,
                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .signedIn(let fresh, let pendingID):
            return browser.afterSignIn(fresh, pendingID: pendingID, next: form["next"])
        }
    }

    /// The second step's page for `user`: the code field when the account has an authenticator
    /// app or recovery codes, and "Use a passkey" when it has a passkey.
    func secondStepPage(_ user: User, requestID: String?, next: String?) async throws -> AccountForm {
        let summary = try await factors.summary(of: user)
        let codes = summary.authenticator != nil || summary.recoveryCodesLeft > 0 || summary.passkeys.isEmpty
        return AccountForm.secondStep(
            requestID: requestID, next: next, site: factors.siteName, codes: codes,
            passkey: passkeys.available && !summary.passkeys.isEmpty)
    }

    func secondStepResponse(
        _ form: AccountForm, _ session: BrowserSession, status: HTTPResponse.Status = .ok, cookies: [Cookie]
    ) -> Response {
        let page = pages.accountFormPage(form, csrfToken: session.csrfToken)
        return form.offersPasskey
            ? HTTPResponses.htmlWithPasskeys(page, status: status, cookies: cookies)
            : HTTPResponses.html(page, status: status, cookies: cookies)
    }

    /// `POST /webauthn/options` (fields `csrf_token`, `purpose`): JSON for the page's script.
    func options(_ request: Request) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error):
            return HTTPResponses.json(
                #"{"error":"invalid_request"}"#, status: error == FormBody.tooLarge ? .contentTooLarge : .badRequest)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        guard passkeys.available, let json = try await passkeys.options(form, session: context.session) else {
            return HTTPResponses.json(#"{"error":"access_denied"}"#, status: .forbidden)
        }
        return HTTPResponses.json(json)
    }

    /// `POST /login/passkey`: sign-in with a passkey alone.
    func passkeySignIn(_ request: Request, clientAddress: String) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return browser.errorPage(error)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        let cookies = accountRoutes.cookies(context)
        switch try await passkeys.signIn(form, session: context.session, clientAddress: clientAddress) {
        case .signedIn(let fresh, let pendingID):
            return browser.afterSignIn(fresh, pendingID: pendingID, next: form["next"])
        case .forbidden:
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Request refused", message: "This form has expired or did not come from this site. Reload the page."),
                status: .forbidden, cookies: cookies)
        default:
            return try await browser.signInPage(
                context, requestID: form.isRepeated("request") ? nil : form["request"],
                error: "That passkey could not sign you in. Try again, or sign in with your password.", username: nil,
                next: form["next"].map(ConsoleRoutes.consolePath), status: .unauthorized, cookies: cookies)
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
        // Not even shown to a session that could not confirm it (the key would be one it saw).
        guard try await factors.mayChangeSecondFactors(user, context.session) else {
            return HTTPResponses.html(
                pages.noticePage(
                    Notice(
                        heading: "Sign in with your second factor first", message: SecondFactors.signInWithSecondFactor,
                        link: Notice.Link(label: "Back to security", href: "/account/security")), isError: true),
                status: .forbidden, cookies: accountRoutes.cookies(context))
        }
        let form = AccountForm.setUpTOTP(
            try await factors.beginTOTP(for: user), requestID: query["request"],
            next: query["next"].map(ConsoleRoutes.consolePath),
            needsPassword: try await factors.setUpNeedsPassword(context.session, user) && user.hasPassword)
        return HTTPResponses.html(
            pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: accountRoutes.cookies(context))
    }
}
