import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The console's Sign-in providers page (docs/accounts.md, "Upstream identity providers"):
/// administrators only. A provider's name goes in the query and the form, as a resource's URI does.
/// Unlike `latchkey providers add`, the page does not fetch an OpenID provider's discovery.
struct ConsoleProviderRoutes: Sendable {
    let routes: ConsoleRoutes
    var server: AuthorizationServer { routes.server }
    var console: ConsoleRenderer { routes.console }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin/providers") { request, _ in try await list(request) }
        router.post("/admin/providers") { request, _ in try await add(request) }
        router.post("/admin/providers/enable") { request, _ in try await setEnabled(request, true) }
        router.post("/admin/providers/disable") { request, _ in try await setEnabled(request, false) }
        router.get("/admin/providers/delete") { request, _ in try await confirmDelete(request) }
        router.post("/admin/providers/delete") { request, _ in try await delete(request) }
    }

    /// The page's fixed notices (`?done=…`), beside the console's own (``ConsoleRoutes/notices``).
    static let notices: [String: String] = [
        "provider": "The provider was added. Register its redirect URI there, if you have not yet.",
        "provider-enabled": "The provider is enabled: the sign-in page offers it again.",
        "provider-disabled": "The provider is disabled: the sign-in page no longer offers it, and the sessions "
            + "signed in through it ended.",
    ]

    func notice(_ request: Request) -> String? {
        (try? FormBody.query(request).get())?["done"].flatMap { Self.notices[$0] } ?? routes.notice(request)
    }

    /// The page: every provider with the redirect URI to register there, and the form adding one.
    /// - Parameters:
    ///   - error: why the last submission was refused.
    ///   - typed: that submission, to fill the form with again (never its client secret).
    func providersPage(_ viewer: ConsoleUser, notice: String?, error: AdministrationError? = nil, typed: FormParameters? = nil)
        async throws -> String
    {
        let providers = try await server.console.identityProviders().map { provider in
            (provider: provider, callback: server.console.federationCallback(provider.name))
        }
        return console.providers(
            providers, callbackPattern: server.console.federationCallback("NAME"), viewer: viewer, notice: notice,
            error: error, typed: typed)
    }

    func list(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            routes.page(try await providersPage(viewer, notice: notice(request)))
        }
    }

    func add(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            // A provider trusted with verified addresses signs in to accounts that exist already, so
            // adding one needs the password as recently as making an administrator does.
            if form["links_verified_email"] != nil, let redirect = routes.needsRecentPassword(viewer, next: "/admin/providers") {
                return redirect
            }
            do {
                let registration = try Self.registration(form)
                _ = try await server.console.addIdentityProvider(registration, by: viewer)
                return HTTPResponses.redirect("/admin/providers?done=provider")
            } catch let error as AdministrationError {
                return routes.page(
                    try await providersPage(viewer, notice: nil, error: error, typed: form), status: .badRequest)
            }
        }
    }

    /// `POST /admin/providers/enable` and `/disable` (field `name`). Disabling takes sign-in away at
    /// once; enabling gives it back, so it needs the password as recently as enabling an account does.
    func setEnabled(_ request: Request, _ enabled: Bool) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let name = form["name"] else { return routes.refused() }
            if enabled, let redirect = routes.needsRecentPassword(viewer, next: "/admin/providers") { return redirect }
            do {
                try await server.administration.acting(as: viewer.user).setIdentityProviderEnabled(name: name, enabled)
                return HTTPResponses.redirect("/admin/providers?done=" + (enabled ? "provider-enabled" : "provider-disabled"))
            } catch let error as AdministrationError {
                return routes.page(
                    routes.browser.pages.messagePage(heading: "Not changed", message: error.description), status: .badRequest)
            }
        }
    }

    func confirmDelete(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let name = (try? FormBody.query(request).get())?["name"] ?? ""
            let path = "/admin/providers/delete?name=" + FormParameters.percentEncode(name)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            guard let provider = try await server.console.identityProvider(name: name) else {
                return routes.notFound(viewer, "provider \(name)")
            }
            return routes.page(
                console.confirm(
                    heading: "Delete the provider \(provider.displayName)?",
                    message: "No one can sign in through \(provider.displayName) any more. This cannot be undone. "
                        + "Deleting it also:",
                    consequences: [
                        "deletes every account's link to it",
                        "signs out the sessions signed in through it at once",
                        "keeps the accounts it made, but one without a password cannot sign in until a password is set",
                    ],
                    action: "/admin/providers/delete", fields: [("name", provider.name)],
                    button: "Delete \(provider.displayName)", back: "/admin/providers", viewer: viewer, section: .providers))
        }
    }

    func delete(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let name = form["name"] else { return routes.refused() }
            let path = "/admin/providers/delete?name=" + FormParameters.percentEncode(name)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            do {
                try await server.administration.acting(as: viewer.user).deleteIdentityProvider(name: name)
                return HTTPResponses.redirect("/admin/providers?done=deleted")
            } catch let error as AdministrationError {
                return routes.page(
                    routes.browser.pages.messagePage(heading: "Not deleted", message: error.description), status: .badRequest)
            }
        }
    }

    // MARK: The form

    /// The form's fields that hold one value each (the checkboxes too).
    static let fields = [
        "name", "display_name", "kind", "issuer", "client_id", "client_secret", "scopes", "authorization_endpoint",
        "token_endpoint", "userinfo_endpoint", "subject_claim", "username_claim", "creates_accounts",
        "allowed_email_domains", "links_verified_email", "updates_profile",
    ]

    /// Reads the provider form (fields named as `latchkey providers add`'s options): an empty field
    /// is absent, lists are separated by spaces, an empty claim keeps its default.
    static func registration(_ form: FormParameters) throws -> IdentityProviderRegistration {
        if let repeated = fields.first(where: form.isRepeated) {
            throw AdministrationError("\(repeated) was sent more than once.", field: repeated)
        }
        // No store keeps a NUL in text.
        if let field = fields.first(where: { form[$0]?.hasNUL ?? false }) {
            throw AdministrationError("\(field) holds a NUL character.", field: field)
        }
        func text(_ name: String) -> String? {
            form[name].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        func words(_ name: String) -> [String] {
            (form[name] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
        }
        guard let kind = IdentityProviderKind(rawValue: text("kind") ?? "oidc") else {
            throw AdministrationError("Choose OpenID Connect or plain OAuth 2.0.", field: "kind")
        }
        var registration = IdentityProviderRegistration(
            name: text("name") ?? "", issuer: text("issuer"), clientID: text("client_id") ?? "")
        registration.displayName = text("display_name")
        registration.kind = kind
        registration.clientSecret = text("client_secret")
        registration.scope = words("scopes")
        registration.authorizationEndpoint = text("authorization_endpoint")
        registration.tokenEndpoint = text("token_endpoint")
        registration.userinfoEndpoint = text("userinfo_endpoint")
        if let subject = text("subject_claim") { registration.claims.subject = subject }
        if let username = text("username_claim") { registration.claims.username = username }
        registration.createsAccounts = form["creates_accounts"] != nil
        registration.allowedEmailDomains = words("allowed_email_domains")
        registration.linksVerifiedEmail = form["links_verified_email"] != nil
        registration.updatesProfile = form["updates_profile"] != nil
        return registration
    }
}
