import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The admin console's pages (`/admin`): apps, users and scopes. Every page needs a signed-in
/// session allowed into its area (`Console.consoleAccess(_:area:)`); every form
/// carries the session's CSRF token; deleting anything, rotating a secret, resetting a password
/// and changing a role also need the password typed within the last minutes.
struct ConsoleRoutes: Sendable {
    let server: AuthorizationServer
    let browser: BrowserRoutes
    let console: ConsoleRenderer

    init(server: AuthorizationServer, browser: BrowserRoutes) {
        self.server = server
        self.browser = browser
        console = ConsoleRenderer(
            pages: browser.pages, passwordMinimumLength: server.administration.passwordPolicy.minimumLength)
    }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin") { request, _ in try await appList(request) }
        router.get("/admin/assets/console.js") { _, _ in script() }
        router.get("/admin/apps/new") { request, _ in try await newApp(request) }
        router.post("/admin/apps") { request, _ in try await createApp(request) }
        router.get("/admin/apps/:id") { request, context in try await editApp(request, id: context.parameters.get("id") ?? "") }
        router.post("/admin/apps/:id") { request, context in try await saveApp(request, id: context.parameters.get("id") ?? "") }
        router.get("/admin/apps/:id/delete") { request, context in
            try await confirmDeleteApp(request, id: context.parameters.get("id") ?? "")
        }
        router.post("/admin/apps/:id/delete") { request, context in
            try await deleteApp(request, id: context.parameters.get("id") ?? "")
        }
        router.get("/admin/apps/:id/rotate-secret") { request, context in
            try await confirmRotate(request, id: context.parameters.get("id") ?? "")
        }
        router.post("/admin/apps/:id/rotate-secret") { request, context in
            try await rotate(request, id: context.parameters.get("id") ?? "")
        }
        router.get("/admin/reauthenticate") { request, _ in try await reauthenticationForm(request) }
        router.post("/admin/reauthenticate") { request, context in
            try await reauthenticate(request, clientAddress: context.clientAddress)
        }
        ConsoleUserRoutes(routes: self).register(on: router)
        ConsoleResourceRoutes(routes: self).register(on: router)
        ConsoleProviderRoutes(routes: self).register(on: router)
        ConsoleActivityRoutes(routes: self).register(on: router)
    }

    // MARK: Access

    /// Runs `body` for a viewer allowed into `area`; else the sign-in page (then back here) or 403.
    func withViewer(
        _ request: Request, _ area: ConsoleArea, _ body: (ConsoleUser) async throws -> Response
    ) async throws -> Response {
        let context = try await browser.session(request)
        let cookies = context.newCookie.map { [browser.sessionCookie($0)] } ?? []
        switch try await server.console.consoleAccess(context, area: area) {
        case .signIn:
            let back = request.method == .get ? request.uri.path : "/admin"
            return HTTPResponses.redirect("/login?next=" + FormParameters.percentEncode(back), cookies: cookies)
        case .forbidden:
            return HTTPResponses.html(
                browser.pages.messagePage(
                    heading: "Not for this account",
                    message: "This part of Latchkey is for its administrators. Ask one if you need access."),
                status: .forbidden, cookies: cookies)
        case .secondFactorNeeded:
            let back = FormParameters.percentEncode(request.method == .get ? request.uri.path : "/admin")
            var hasOne = false
            if let user = try await server.sessions.signedInUser(context.session) {
                hasOne = try await server.secondFactors.hasSecondFactor(user.id)
            }
            return HTTPResponses.redirect(
                (hasOne ? "/login/second-factor?next=" : "/account/security/totp?next=") + back, cookies: cookies)
        case .allowed(let viewer):
            return try await body(viewer)
        }
    }

    /// Runs `body` with the form a viewer allowed into `area` posted, once its CSRF token checks out.
    func withForm(
        _ request: Request, _ area: ConsoleArea, _ body: (ConsoleUser, FormParameters) async throws -> Response
    ) async throws -> Response {
        try await withViewer(request, area) { viewer in
            switch await form(request, viewer) {
            case .failure(let response): return response
            case .success(let form): return try await body(viewer, form)
            }
        }
    }

    /// A form posted by a console page.
    enum PostedForm {
        case success(FormParameters)
        /// A bad body, or no valid CSRF token: answer this.
        case failure(Response)
    }

    /// The form posted by `viewer`'s session, or the response refusing it.
    func form(_ request: Request, _ viewer: ConsoleUser) async -> PostedForm {
        switch await FormBody.read(request) {
        case .failure(let error): return .failure(browser.errorPage(error))
        case .success(let form):
            guard server.console.hasValidCSRFToken(form, session: viewer.session) else { return .failure(refused()) }
            return .success(form)
        }
    }

    func refused() -> Response {
        HTTPResponses.html(
            browser.pages.messagePage(
                heading: "Request refused",
                message: "This form has expired or did not come from this site. Reload the page and try again."),
            status: .forbidden)
    }

    /// `nil` when the viewer typed their password recently enough; else the redirect to the
    /// re-authentication page, which comes back to `next` (a console page shown with GET).
    func needsRecentPassword(_ viewer: ConsoleUser, next: String) -> Response? {
        viewer.recentlyAuthenticated
            ? nil : HTTPResponses.redirect("/admin/reauthenticate?next=" + FormParameters.percentEncode(next))
    }

    /// A console page: the pages' headers, but scripts from this origin allowed (the copy button).
    func page(_ html: String, status: HTTPResponse.Status = .ok) -> Response {
        var response = HTTPResponses.html(html, status: status)
        // connect-src: the passkey button fetches its options from this origin.
        response.headers[.contentSecurityPolicy] =
            (response.headers[.contentSecurityPolicy] ?? "") + "; script-src 'self'; connect-src 'self'"
        return response
    }

    func notFound(_ viewer: ConsoleUser, _ what: String) -> Response {
        page(
            browser.pages.messagePage(heading: "Not found", message: "There is no \(what) here, or it is not yours to manage."),
            status: .notFound)
    }

    /// The fixed texts a redirect may ask a page to show (`?done=…`): never text from the URL.
    static let notices: [String: String] = [
        "registered": "The app was registered.", "saved": "Saved.", "deleted": "Deleted.",
        "created": "The user was created.", "disabled": "The account is disabled; its sessions and tokens ended.",
        "enabled": "The account is enabled again.", "role": "The role was changed.",
        "password": "The password was changed; the user was signed out and every app's access ended.",
        "revoked": "The app's access was revoked.", "signed-out": "The user was signed out everywhere.",
        "session-ended": "That session was signed out.",
        "scope": "The scope was saved.", "resource": "The resource was registered.",
        "invited": "The invitation is in the outbox; it works once, for 7 days.",
        "second-factor-required": "This account must now sign in with a second factor.",
        "second-factor-optional": "This account no longer needs a second factor, unless the server's policy asks for one.",
        "second-factors": "The second factors were reset: the user's password alone signs them in until they set up new ones.",
    ]

    func notice(_ request: Request) -> String? {
        (try? FormBody.query(request).get())?["done"].flatMap { Self.notices[$0] }
    }

    // MARK: Apps

    /// The server's default lifetimes, which the app form names.
    var lifetimes: (access: TimeInterval, refresh: TimeInterval) {
        (server.configuration.accessTokenLifetime, server.configuration.refreshTokenLifetime)
    }

    func appList(_ request: Request) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            page(console.apps(try await server.console.consoleApps(for: viewer), viewer: viewer, notice: notice(request)))
        }
    }

    func newApp(_ request: Request) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            let settings = ClientSettings(type: .native, name: "", scopes: ["profile"])
            return page(
                console.appForm(
                    settings, app: nil, catalogue: try await server.scopeCatalogue(), viewer: viewer, preview: nil, error: nil,
                    defaults: lifetimes))
        }
    }

    func editApp(_ request: Request, id: String) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            guard let app = try await server.console.consoleApp(id: id, for: viewer) else { return notFound(viewer, "app \(id)") }
            return page(
                console.appForm(
                    ClientSettings(app.client, ownerUsername: app.ownerUsername), app: app,
                    catalogue: try await server.scopeCatalogue(), viewer: viewer, preview: nil, error: nil, defaults: lifetimes))
        }
    }

    func createApp(_ request: Request) async throws -> Response {
        try await withForm(request, .apps) { viewer, form in
            try await submitApp(request, viewer: viewer, form: form, existing: nil)
        }
    }

    func saveApp(_ request: Request, id: String) async throws -> Response {
        try await withForm(request, .apps) { viewer, form in
            guard let app = try await server.console.consoleApp(id: id, for: viewer) else { return notFound(viewer, "app \(id)") }
            return try await submitApp(request, viewer: viewer, form: form, existing: app)
        }
    }

    /// The app form posted: shows the consent preview, or saves and goes on, or shows the form
    /// again with what was wrong.
    private func submitApp(_ request: Request, viewer: ConsoleUser, form: FormParameters, existing: ConsoleApp?) async throws
        -> Response
    {
        let catalogue = try await server.scopeCatalogue()
        var settings: ClientSettings
        do {
            settings = try ClientSettings(form: form, type: existing?.client.type)
        } catch let error as AdministrationError {
            let fallback =
                existing.map { ClientSettings($0.client, ownerUsername: $0.ownerUsername) }
                ?? ClientSettings(type: .native, name: "")
            return page(
                console.appForm(
                    fallback, app: existing, catalogue: catalogue, viewer: viewer, preview: nil, error: error, defaults: lifetimes
                ),
                status: .badRequest)
        }
        if !viewer.isAdmin { settings.ownerUsername = viewer.user.username.rawValue }
        if form["action"] == "preview" {
            var client =
                existing?.client
                ?? Client(
                    id: ClientID(rawValue: "preview"), type: settings.type, name: "", redirectURIs: [], scopes: ScopeSet([]),
                    createdAt: Date())
            client.name = settings.name
            client.scopes = ScopeSet(settings.scopes.isEmpty ? ["profile"] : settings.scopes)
            client.logoURI = settings.logoURI
            client.privacyPolicyURI = settings.privacyPolicyURI
            client.consentMarkdown = settings.consentMarkdown
            let preview = browser.pages.consentPreview(
                client: client, catalogue: catalogue, username: viewer.user.username.rawValue)
            return page(
                console.appForm(
                    settings, app: existing, catalogue: catalogue, viewer: viewer, preview: preview, error: nil,
                    defaults: lifetimes))
        }
        do {
            if let existing {
                _ = try await server.console.consoleUpdate(id: existing.client.id.rawValue, settings, by: viewer)
                return HTTPResponses.redirect("/admin?done=saved")
            }
            let registered = try await server.console.consoleRegister(settings, by: viewer)
            guard registered.secret != nil else { return HTTPResponses.redirect("/admin?done=registered") }
            // The secret is shown on this response only: never in a URL, never stored.
            return page(
                console.secret(
                    client: registered.client, secret: registered.secret, heading: "\(registered.client.name) is registered",
                    viewer: viewer))
        } catch let error as AdministrationError {
            return page(
                console.appForm(
                    settings, app: existing, catalogue: catalogue, viewer: viewer, preview: nil, error: error, defaults: lifetimes
                ),
                status: .badRequest)
        }
    }

    func confirmDeleteApp(_ request: Request, id: String) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            guard let app = try await server.console.consoleApp(id: id, for: viewer) else { return notFound(viewer, "app \(id)") }
            if let redirect = needsRecentPassword(viewer, next: request.uri.path) { return redirect }
            return page(
                console.confirm(
                    heading: "Delete \(app.client.name)?", message: "This cannot be undone. Deleting the app also deletes:",
                    consequences: [
                        "its \(app.activeGrants) active grant\(app.activeGrants == 1 ? "" : "s") and every token and code it holds: "
                            + "signed-in users of the app are signed out of it at once",
                        "the consent its users gave it",
                    ] + (app.client.type.isConfidential ? ["its client secret"] : []),
                    action: "/admin/apps/\(id)/delete", button: "Delete \(app.client.name)", back: "/admin/apps/\(id)",
                    viewer: viewer, section: .apps))
        }
    }

    func deleteApp(_ request: Request, id: String) async throws -> Response {
        try await withForm(request, .apps) { viewer, _ in
            guard try await server.console.consoleApp(id: id, for: viewer) != nil else { return notFound(viewer, "app \(id)") }
            if let redirect = needsRecentPassword(viewer, next: "/admin/apps/\(id)/delete") { return redirect }
            _ = try await server.administration.acting(as: viewer.user).deleteClient(id: id)
            return HTTPResponses.redirect("/admin?done=deleted")
        }
    }

    func confirmRotate(_ request: Request, id: String) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            guard let app = try await server.console.consoleApp(id: id, for: viewer), app.client.type.isConfidential else {
                return notFound(viewer, "confidential app \(id)")
            }
            if let redirect = needsRecentPassword(viewer, next: request.uri.path) { return redirect }
            return page(
                console.confirm(
                    heading: "Rotate the secret of \(app.client.name)?",
                    message: "A new secret is made and shown once. The current secret stops working at once: "
                        + "the app's server cannot get tokens until it has the new one.",
                    action: "/admin/apps/\(id)/rotate-secret", button: "Rotate the secret", back: "/admin/apps/\(id)",
                    viewer: viewer, section: .apps))
        }
    }

    func rotate(_ request: Request, id: String) async throws -> Response {
        try await withForm(request, .apps) { viewer, _ in
            guard let app = try await server.console.consoleApp(id: id, for: viewer) else { return notFound(viewer, "app \(id)") }
            if let redirect = needsRecentPassword(viewer, next: "/admin/apps/\(id)/rotate-secret") { return redirect }
            do {
                let secret = try await server.administration.acting(as: viewer.user).rotateSecret(clientID: id)
                return page(
                    console.secret(
                        client: app.client, secret: secret, heading: "A new secret for \(app.client.name)", viewer: viewer))
            } catch let error as AdministrationError {
                return page(browser.pages.messagePage(heading: "Not rotated", message: error.description), status: .badRequest)
            }
        }
    }

    // MARK: Re-authentication

    /// A console path to return to, or `/admin`: never another site (no open redirect).
    /// The path is checked as a server would read it, percent-decoded: `/admin/%2e%2e/x` is
    /// `/admin/../x` (docs/threat-model.md RV16).
    static func consolePath(_ next: String?) -> String {
        guard let next, next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { return "/admin" }
        let path = String(next.prefix { $0 != "?" && $0 != "#" })
        guard let decoded = path.removingPercentEncoding, !decoded.contains("%"),
            decoded == "/admin" || decoded.hasPrefix("/admin/"),
            !decoded.contains("//"), !decoded.contains("\\"), !decoded.contains(".."), !next.contains("#")
        else { return "/admin" }
        return next
    }

    func reauthenticationForm(_ request: Request) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            let next = Self.consolePath((try? FormBody.query(request).get())?["next"])
            return page(
                console.reauthenticate(
                    next: next, error: nil, minutes: Int(server.configuration.adminReauthenticationWindow / 60), viewer: viewer,
                    asksPassword: server.configuration.usesPassword(viewer.user), passkey: try await offersPasskey(viewer),
                    provider: try await reauthenticationProvider(viewer)))
        }
    }

    func reauthenticate(_ request: Request, clientAddress: String) async throws -> Response {
        try await withViewer(request, .apps) { viewer in
            guard case .success(let form) = await FormBody.read(request) else { return refused() }
            let next = Self.consolePath(form["next"])
            switch try await server.console.reauthenticate(form, session: viewer.session, clientAddress: clientAddress) {
            case .forbidden:
                return refused()
            case .refused(let message, let retryAfter):
                var response = page(
                    console.reauthenticate(
                        next: next, error: message, minutes: Int(server.configuration.adminReauthenticationWindow / 60),
                        viewer: viewer, asksPassword: server.configuration.usesPassword(viewer.user),
                        passkey: try await offersPasskey(viewer),
                        provider: try await reauthenticationProvider(viewer)),
                    status: retryAfter == nil ? .unauthorized : .tooManyRequests)
                if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
                return response
            case .renewed(let fresh):
                return HTTPResponses.redirect(next, cookies: fresh.newCookie.map { [browser.sessionCookie($0)] } ?? [])
            }
        }
    }

    /// The upstream provider the re-authentication page offers to sign in through again, for an
    /// account without a password to type: the one the session came through, else one the account
    /// is linked to, if it is enabled and an OpenID provider (which can show that it asked the
    /// person again: `auth_time`).
    func reauthenticationProvider(_ viewer: ConsoleUser) async throws -> IdentityProvider? {
        guard !server.configuration.usesPassword(viewer.user) else { return nil }
        let linked = Set(try await server.federation.links(of: viewer.user.id).map(\.provider))
        let enabled = try await server.federation.enabledProviders().filter {
            linked.contains($0.name) && $0.kind == .openIDConnect
        }
        return enabled.first { $0.name == viewer.session.amr?.identityProvider } ?? enabled.first
    }

    /// Whether the re-authentication page offers a passkey: the viewer has one, and browsers can use it here.
    func offersPasskey(_ viewer: ConsoleUser) async throws -> Bool {
        let passkeys = server.secondFactors.passkeys
        guard passkeys.available else { return false }
        return try await passkeys.hasPasskey(viewer.user.id)
    }

    /// The copy button's script (the pages allow scripts from this origin only).
    func script() -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: ConsoleTemplates.script)))
    }
}

extension ClientSettings {
    /// Reads the app form (fields named as the admin API's members). `type` is the registered
    /// type when editing (it cannot change).
    init(form: FormParameters, type registered: ClientType?) throws {
        let single = [
            "application_type", "client_name", "redirect_uris", "logo_uri", "policy_uri", "consent_markdown", "owner",
            "access_token_lifetime", "refresh_token_lifetime", "id_token_signed_response_alg", "post_logout_redirect_uris",
            "jwks_uri", "jwks",
        ]
        if let repeated = single.first(where: form.isRepeated) {
            throw AdministrationError("\(repeated) was sent more than once.", field: repeated)
        }
        guard let type = registered ?? form["application_type"].flatMap(ClientType.init(rawValue:)) else {
            throw AdministrationError(
                "application_type must be native, browser, web or service.", field: "application_type")
        }
        func text(_ name: String) -> String? {
            form[name].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        func seconds(_ name: String) throws -> Int? {
            guard let value = text(name) else { return nil }
            guard let seconds = Int(value) else {
                throw AdministrationError("\(name) must be a whole number of seconds.", field: name)
            }
            return seconds
        }
        func lines(_ name: String) -> [String] {
            (form[name] ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        var algorithm = SigningAlgorithm.rs256
        if let named = text("id_token_signed_response_alg") {
            guard let known = SigningAlgorithm(rawValue: named) else {
                throw AdministrationError(
                    "id_token_signed_response_alg must be RS256 or ES256.", field: "id_token_signed_response_alg")
            }
            algorithm = known
        }
        self.init(
            type: type, name: form["client_name"] ?? "", redirectURIs: lines("redirect_uris"),
            scopes: form.all("scope"), logoURI: text("logo_uri"),
            consentMarkdown: form["consent_markdown"].flatMap {
                $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0
            },
            privacyPolicyURI: text("policy_uri"), ownerUsername: text("owner"),
            allowImplicit: form["allow_implicit"] == "true", firstParty: form["first_party"] == "true",
            accessTokenLifetime: try seconds("access_token_lifetime"),
            refreshTokenLifetime: try seconds("refresh_token_lifetime"),
            idTokenSigningAlgorithm: algorithm, postLogoutRedirectURIs: lines("post_logout_redirect_uris"),
            requirePushedAuthorizationRequests: form["require_pushed_authorization_requests"] == "true",
            allowDeviceCode: form["allow_device_code"] == "true",
            keys: try Self.keys(jwksURI: text("jwks_uri"), jwks: text("jwks")),
            allowTokenExchange: form["allow_token_exchange"] == "true", backchannelLogoutURI: text("backchannel_logout_uri"))
    }

    /// `jwks_uri` or `jwks`, at most one of them.
    static func keys(jwksURI: String?, jwks: String?) throws -> ClientKeys? {
        switch (jwksURI, jwks) {
        case (let address?, nil): return .jwksURI(address)
        case (nil, let json?): return .jwks(json)
        case (nil, nil): return nil
        case (_?, _?): throw AdministrationError("Give the key set URL or the key set, not both.", field: "jwks_uri")
        }
    }
}
