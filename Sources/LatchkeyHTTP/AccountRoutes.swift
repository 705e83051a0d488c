import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The self-service pages (docs/accounts.md): sign-up, the forgotten-password form,
/// the e-mailed links' pages, and the account page's changes. Every link in an e-mail opens a
/// page with a button: only its `POST` uses the link, so a mail scanner that fetches links uses none.
struct AccountRoutes: Sendable {
    let server: AuthorizationServer
    let browser: BrowserRoutes
    var pages: PageRenderer { browser.pages }
    var selfService: SelfService { server.selfService }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/signup") { request, _ in try await signUpForm(request) }
        router.post("/signup") { request, context in try await signUp(request, clientAddress: context.clientAddress) }
        router.get("/password/forgot") { request, _ in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            guard selfService.sendsMail else { return withoutMail() }
            return try await show(request, .forgotPassword())
        }
        router.post("/password/forgot") { request, context in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            return try await submit(request) { form, session in
                try await selfService.requestPasswordReset(form, session: session, clientAddress: context.clientAddress)
            } again: { form, _, _ in
                .forgotPassword(login: form["login"])
            }
        }
        router.get("/password/reset") { request, _ in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            return try await resetForm(request)
        }
        router.post("/password/reset") { request, _ in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            return try await submit(request) { form, session in
                try await selfService.resetPassword(form, session: session)
            } again: { form, _, _ in
                // The account's name from the link, never from the form.
                guard let token = form["token"], let user = try await selfService.resetAccount(token: token) else {
                    return nil
                }
                return .resetPassword(
                    token: token, username: user.username.rawValue, minimumLength: selfService.passwordMinimumLength)
            }
        }
        router.get("/email/verify") { request, _ in try await verifyForm(request) }
        router.post("/email/verify") { request, _ in
            try await submit(request) { form, session in try await selfService.verifyEmail(form, session: session) }
        }
        router.get("/account/password") { request, _ in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            return try await showSignedIn(request) { user, _ in passwordForm(for: user) }
        }
        router.post("/account/password") { request, context in
            guard server.configuration.passwordSignIn else { return withoutPasswords() }
            return try await submit(request) { form, session in
                try await selfService.changePassword(form, session: session, clientAddress: context.clientAddress)
            } again: { _, user, _ in
                passwordForm(for: user)
            }
        }
        router.get("/account/email") { request, _ in
            guard selfService.sendsMail else { return withoutMail() }
            return try await showSignedIn(request) { user, session in
                .changeEmail(
                    current: user.email, verified: user.emailVerified,
                    needsPassword: selfService.emailChangeNeedsPassword(session)
                ).asked(of: user, server.configuration)
            }
        }
        router.post("/account/email") { request, context in
            try await submit(request) { form, session in
                try await selfService.requestEmailChange(form, session: session, clientAddress: context.clientAddress)
            } again: { form, user, session in
                .changeEmail(
                    current: user?.email, verified: user?.emailVerified ?? false,
                    needsPassword: selfService.emailChangeNeedsPassword(session), value: form["email"]
                ).asked(of: user, server.configuration)
            }
        }
        router.get("/account/delete") { request, _ in
            try await showSignedIn(request) { user, _ in
                AccountForm.deleteAccount(username: user.username.rawValue).asked(of: user, server.configuration)
            }
        }
        router.post("/account/delete") { request, context in
            try await submit(request) { form, session in
                try await selfService.deleteAccount(form, session: session, clientAddress: context.clientAddress)
            } again: { _, user, _ in
                AccountForm.deleteAccount(username: user?.username.rawValue ?? "").asked(of: user, server.configuration)
            }
        }
    }

    /// The routes' paths and methods, for ``RouteTable``.
    static let routes: [String: RouteTable.Route] = [
        "/signup", "/password/forgot", "/password/reset", "/email/verify", "/account/password", "/account/email",
        "/account/delete",
    ].reduce(into: [:]) { $0[$1] = RouteTable.Route(allow: "GET, HEAD, POST", isPage: true) }

    // MARK: - Pages

    /// `GET /signup[?invitation=…][&request=…]`: 404 while sign-up is off.
    func signUpForm(_ request: Request) async throws -> Response {
        let query = (try? FormBody.query(request).get()) ?? FormParameters([])
        guard let form = try await selfService.signUpForm(invitation: query["invitation"]) else { return notFound() }
        let context = try await browser.session(request)
        var page = AccountForm.signUp(
            form, requestID: query["request"], minimumLength: selfService.passwordMinimumLength)
        if selfService.signUp.mode == .invite, form.invitation == nil { page.error = SelfService.invitationNeeded }
        return HTTPResponses.html(pages.accountFormPage(page, csrfToken: context.session.csrfToken), cookies: cookies(context))
    }

    /// `POST /signup`.
    func signUp(_ request: Request, clientAddress: String) async throws -> Response {
        guard selfService.signUp.mode != .off else { return notFound() }
        return try await submit(request) { form, session in
            try await selfService.signUp(form, session: session, clientAddress: clientAddress)
        } again: { form, _, _ in
            let invited = try await selfService.signUpForm(invitation: form["invitation"]) ?? SignUpForm()
            return .signUp(
                invited, requestID: form["request"], minimumLength: selfService.passwordMinimumLength,
                values: ["username": form["username"] ?? "", "email": form["email"] ?? ""])
        }
    }

    /// `GET /password/reset?token=…`.
    func resetForm(_ request: Request) async throws -> Response {
        let token = (try? FormBody.query(request).get())?["token"]
        let context = try await browser.session(request)
        guard let token, let user = try await selfService.resetAccount(token: token) else {
            return HTTPResponses.html(
                pages.noticePage(SelfService.usedLink, isError: true), status: .gone, cookies: cookies(context))
        }
        let form = AccountForm.resetPassword(
            token: token, username: user.username.rawValue, minimumLength: selfService.passwordMinimumLength)
        return HTTPResponses.html(pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: cookies(context))
    }

    /// `GET /email/verify?token=…`.
    func verifyForm(_ request: Request) async throws -> Response {
        let token = (try? FormBody.query(request).get())?["token"]
        let context = try await browser.session(request)
        guard let token, let link = try await selfService.verificationLink(token: token) else {
            return HTTPResponses.html(
                pages.noticePage(SelfService.usedLink, isError: true), status: .gone, cookies: cookies(context))
        }
        let form = AccountForm.verifyEmail(token: token, email: link.email)
        return HTTPResponses.html(pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: cookies(context))
    }

    /// A form anyone may open (the forgotten-password form).
    func show(_ request: Request, _ form: AccountForm) async throws -> Response {
        let context = try await browser.session(request)
        return HTTPResponses.html(
            pages.accountFormPage(form, csrfToken: context.session.csrfToken), cookies: cookies(context))
    }

    /// A form of the signed-in person's account; without a session, the sign-in page first.
    func showSignedIn(_ request: Request, _ form: (User, BrowserSession) -> AccountForm) async throws -> Response {
        let context = try await browser.session(request)
        guard let user = try await server.sessions.signedInUser(context.session) else {
            return HTTPResponses.redirect("/login", cookies: cookies(context))
        }
        return HTTPResponses.html(
            pages.accountFormPage(form(user, context.session), csrfToken: context.session.csrfToken), cookies: cookies(context))
    }

    /// Reads a form, runs `action` and answers its outcome; `again` draws the form once more
    /// with the error (without it, or when it answers `nil`, a notice page says what went wrong).
    func submit(
        _ request: Request, _ action: (FormParameters, BrowserSession) async throws -> SelfServiceOutcome,
        again: ((FormParameters, User?, BrowserSession) async throws -> AccountForm?)? = nil
    ) async throws -> Response {
        let form: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error): return browser.errorPage(error)
        case .success(let value): form = value
        }
        let context = try await browser.session(request)
        let outcome = try await action(form, context.session)
        func redraw(_ message: String, field: String?, status: HTTPResponse.Status) async throws -> Response {
            let user = try await server.sessions.signedInUser(context.session)
            guard var page = try await again?(form, user, context.session) else {
                return HTTPResponses.html(
                    pages.noticePage(Notice(heading: "Not done", message: message), isError: true), status: status,
                    cookies: cookies(context))
            }
            page.error = message
            page.errorField = field
            return HTTPResponses.html(
                pages.accountFormPage(page, csrfToken: context.session.csrfToken), status: status, cookies: cookies(context))
        }
        switch outcome {
        case .notFound:
            return notFound()
        case .forbidden:
            return HTTPResponses.html(
                pages.messagePage(
                    heading: "Request refused",
                    message: "This form has expired, did not come from this site, or you are not signed in. "
                        + "Reload the page and try again."),
                status: .forbidden, cookies: cookies(context))
        case .invalid(let field, let message):
            return try await redraw(message, field: field, status: .badRequest)
        case .throttled(let retryAfter):
            let minutes = (retryAfter + 59) / 60
            var response = try await redraw(
                "Too many attempts. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").", field: nil,
                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .busy(let retryAfter):
            var response = try await redraw(
                "Latchkey is busy checking other passwords. Try again in a few seconds.", field: nil,
                status: .serviceUnavailable)
            response.headers[.retryAfter] = "\(retryAfter)"
            return response
        case .done(let notice, let session, let signedOut):
            var set = cookies(context)
            if let cookie = session?.newCookie { set = [browser.sessionCookie(cookie)] }
            if signedOut { set = [browser.sessionCookie("", maxAge: 0)] }
            return HTTPResponses.html(pages.noticePage(notice), cookies: set)
        case .signedIn(let fresh, let next):
            return HTTPResponses.redirect(next, cookies: fresh.newCookie.map { [browser.sessionCookie($0)] } ?? [])
        case .recoveryCodes(let codes, let fresh, let next):
            let set = fresh?.newCookie.map { [browser.sessionCookie($0)] } ?? cookies(context)
            return HTTPResponses.html(
                pages.accountFormPage(.recoveryCodes(codes, next: next), csrfToken: context.session.csrfToken), cookies: set)
        }
    }

    /// What a page that needs e-mail says when the server sends none.
    /// `/account/password`: a new password, or an account's first one when it has none.
    func passwordForm(for user: User?) -> AccountForm {
        user?.hasPassword == false
            ? .setPassword(minimumLength: selfService.passwordMinimumLength)
            : .changePassword(minimumLength: selfService.passwordMinimumLength)
    }

    /// What the password pages answer while passwords are turned off (`password-sign-in off`): 404.
    func withoutPasswords() -> Response {
        HTTPResponses.html(
            pages.noticePage(
                Notice(
                    heading: "Not available here",
                    message: "Passwords are turned off here: people sign in through the ways the sign-in page shows.",
                    link: Notice.Link(label: "Go to sign-in", href: "/login")), isError: true),
            status: .notFound)
    }

    func withoutMail() -> Response {
        HTTPResponses.html(
            pages.noticePage(
                Notice(
                    heading: "Not available here",
                    message: "This site does not send e-mail, so this cannot be done here. "
                        + "Ask the people who run it.",
                    link: Notice.Link(label: "Go to sign-in", href: "/login")), isError: true))
    }

    /// 404 for a page that is switched off (sign-up while `--sign-up off`): a page, not `405`.
    func notFound() -> Response {
        HTTPResponses.html(
            pages.messagePage(heading: "Not found", message: "There is no such page on this site."), status: .notFound)
    }

    func cookies(_ context: SessionContext) -> [Cookie] {
        context.newCookie.map { [browser.sessionCookie($0)] } ?? []
    }
}
