import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The console's users and scopes pages: administrators only.
struct ConsoleUserRoutes: Sendable {
    let routes: ConsoleRoutes
    var server: AuthorizationServer { routes.server }
    var console: ConsoleRenderer { routes.console }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin/users") { request, _ in try await list(request) }
        router.post("/admin/users") { request, _ in try await create(request) }
        router.post("/admin/users/invite") { request, _ in try await invite(request) }
        router.get("/admin/users/:id") { request, context in try await show(request, id: context.parameters.get("id") ?? "") }
        for action in [
            "disable", "enable", "end-sessions", "end-session", "revoke", "second-factor-required", "second-factor-optional",
        ] {
            router.post("/admin/users/:id/\(action)") { request, context in
                try await act(request, id: context.parameters.get("id") ?? "", action: action)
            }
        }
        for action in ["role", "password", "delete", "second-factors"] {
            router.get("/admin/users/:id/\(action)") { request, context in
                try await confirm(request, id: context.parameters.get("id") ?? "", action: action)
            }
            router.post("/admin/users/:id/\(action)") { request, context in
                try await sensitive(request, id: context.parameters.get("id") ?? "", action: action)
            }
        }
        router.get("/admin/scopes") { request, _ in try await scopes(request) }
        router.post("/admin/scopes") { request, _ in try await saveScope(request) }
        // The scope's name goes in the query and the form, not the path: a scope may hold "/".
        router.get("/admin/scopes/delete") { request, _ in try await confirmDeleteScope(request) }
        router.post("/admin/scopes/delete") { request, _ in try await deleteScope(request) }
    }

    private func user(id: String) async throws -> User? {
        try await server.console.user(id: id)
    }

    // MARK: Users

    func list(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let query = (try? FormBody.query(request).get())?["q"] ?? ""
            return routes.page(
                console.users(
                    try await server.console.consoleUsers(matching: query), query: query, viewer: viewer,
                    notice: routes.notice(request),
                    error: nil, invites: invites))
        }
    }

    /// Whether the users page offers invitations: sign-up is on and the server sends e-mail.
    var invites: Bool { server.selfService.sendsMail && server.configuration.signUp.mode != .off }

    /// `POST /admin/users/invite` (field `email`): queues an invitation.
    func invite(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            do {
                guard invites else { throw AdministrationError("Invitations need sign-up on and e-mail set up.") }
                try await server.selfService.invite(
                    email: (form["email"] ?? "").trimmingCharacters(in: .whitespaces), actor: viewer.user.id.rawValue)
                return HTTPResponses.redirect("/admin/users?done=invited")
            } catch let error as AdministrationError {
                return routes.page(
                    console.users(
                        try await server.console.consoleUsers(matching: nil), query: "", viewer: viewer, notice: nil,
                        error: nil, invites: invites, inviteError: error.description),
                    status: .badRequest)
            }
        }
    }

    func create(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            // An account that is an administrator from the start grants what a role change does,
            // so it needs the password as recently (docs/threat-model.md RV9).
            if form["role"] == "admin", let redirect = routes.needsRecentPassword(viewer, next: "/admin/users") {
                return redirect
            }
            do {
                let name = form["name"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
                let user = try await server.administration.acting(as: viewer.user).createUser(
                    username: form["username"] ?? "", displayName: name, password: form["password"] ?? "",
                    role: form["role"] == "admin" ? .admin : .none)
                return HTTPResponses.redirect("/admin/users/\(user.id)?done=created")
            } catch let error as AdministrationError {
                return routes.page(
                    console.users(
                        try await server.console.consoleUsers(matching: nil), query: "", viewer: viewer, notice: nil,
                        error: error.description, invites: invites),
                    status: .badRequest)
            } catch is PasswordHashingBusy {
                return routes.page(
                    console.users(
                        try await server.console.consoleUsers(matching: nil), query: "", viewer: viewer, notice: nil,
                        error: "Latchkey is busy checking sign-ins; try again in a few seconds.", invites: invites),
                    status: .serviceUnavailable)
            }
        }
    }

    func show(_ request: Request, id: String) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            guard let user = try await user(id: id),
                let detail = try await server.console.consoleUserDetail(username: user.username.rawValue)
            else { return routes.notFound(viewer, "user \(id)") }
            return routes.page(
                console.user(detail, viewer: viewer, notice: routes.notice(request), links: try await links(of: user)))
        }
    }

    /// The user's links to upstream providers, each with its provider (`nil` if it was deleted meanwhile).
    private func links(of user: User) async throws -> [(link: FederatedIdentity, provider: IdentityProvider?)] {
        let providers = try await server.console.identityProviders()
        return try await server.console.federatedIdentities(userID: user.id).map { link in
            (link: link, provider: providers.first { $0.name == link.provider })
        }
    }

    /// Disable, sign out everywhere, revoke one app: no password needed again, since they take
    /// access away. Enabling gives it back, so it needs the password as recently as a role change.
    func act(_ request: Request, id: String, action: String) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let user = try await user(id: id) else { return routes.notFound(viewer, "user \(id)") }
            let admin = server.administration.acting(as: viewer.user)
            let username = user.username.rawValue
            let done: String
            switch action {
            case "disable":
                guard user.id != viewer.user.id else { return selfRefused(viewer, "disable your own account") }
                try await admin.setDisabled(username: username, true)
                done = "disabled"
            case "enable":
                if let redirect = routes.needsRecentPassword(viewer, next: "/admin/users/\(id)") { return redirect }
                try await admin.setDisabled(username: username, false)
                done = "enabled"
            case "end-sessions":
                try await admin.endSessions(username: username)
                done = "signed-out"
            case "second-factor-required":
                try await admin.setSecondFactorRequired(username: username, true)
                done = "second-factor-required"
            case "second-factor-optional":
                // Weakens the account's sign-in, so it needs the password as recently as a role change.
                if let redirect = routes.needsRecentPassword(viewer, next: "/admin/users/\(id)") { return redirect }
                try await admin.setSecondFactorRequired(username: username, false)
                done = "second-factor-optional"
            case "end-session":
                guard let handle = form["session"] else { return routes.refused() }
                try await admin.endSession(username: username, idHash: handle)
                done = "session-ended"
            default:
                guard let clientID = form["client_id"] else { return routes.refused() }
                try await admin.revokeAuthorization(username: username, clientID: clientID)
                done = "revoked"
            }
            return HTTPResponses.redirect("/admin/users/\(id)?done=\(done)")
        }
    }

    private func selfRefused(_ viewer: ConsoleUser, _ what: String) -> Response {
        routes.page(
            routes.browser.pages.messagePage(
                heading: "Not allowed", message: "You cannot \(what) here: ask another administrator, or use the command line."),
            status: .badRequest)
    }

    /// Role, password and delete: a confirmation page, behind a recent password.
    func confirm(_ request: Request, id: String, action: String) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            guard let user = try await user(id: id) else { return routes.notFound(viewer, "user \(id)") }
            let path = request.uri.path
            let role = (try? FormBody.query(request).get())?["role"].flatMap(UserRole.init(rawValue:)) ?? .admin
            if let redirect = routes.needsRecentPassword(viewer, next: path + (action == "role" ? "?role=\(role.rawValue)" : ""))
            {
                return redirect
            }
            let name = user.username.rawValue
            let back = "/admin/users/\(id)"
            let page: String
            switch action {
            case "role":
                page = console.confirm(
                    heading: role == .admin ? "Make \(name) an administrator?" : "Remove \(name)'s administrator role?",
                    message: role == .admin
                        ? "Administrators manage every app, user and scope of this Latchkey."
                        : "\(name) will no longer reach the admin console.",
                    action: path, fields: [("role", role.rawValue)], button: "Change the role", back: back, viewer: viewer,
                    section: .users)
            case "second-factors":
                page = console.confirm(
                    heading: "Reset \(name)'s second factors?",
                    message: "Do this only once you are sure the request comes from \(name). Resetting:",
                    consequences: [
                        "stops their authenticator app and recovery codes from working",
                        "lets their password alone sign them in, until they set up a new authenticator app "
                            + "(at once, where a second factor is required)",
                    ],
                    action: path, button: "Reset second factors", back: back, viewer: viewer, section: .users)
            case "password":
                page = console.confirm(
                    heading: "Reset \(name)'s password",
                    message: "Give \(name) the new password another way. Resetting it also:",
                    consequences: ["signs \(name) out of every browser", "ends every app's access to the account"],
                    action: path, button: "Reset the password", back: back, asksPassword: true, viewer: viewer,
                    section: .users)
            default:
                page = console.confirm(
                    heading: "Delete \(name)?", message: "This cannot be undone. Deleting the user also deletes:",
                    consequences: ["their sessions", "every grant, token and code they hold", "the consents they gave"],
                    action: path, button: "Delete \(name)", back: back, viewer: viewer, section: .users)
            }
            return routes.page(page)
        }
    }

    func sensitive(_ request: Request, id: String, action: String) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let user = try await user(id: id) else { return routes.notFound(viewer, "user \(id)") }
            if let redirect = routes.needsRecentPassword(viewer, next: "/admin/users/\(id)/\(action)") { return redirect }
            let admin = server.administration.acting(as: viewer.user)
            let name = user.username.rawValue
            do {
                switch action {
                case "role":
                    guard let role = form["role"].flatMap(UserRole.init(rawValue:)) else { return routes.refused() }
                    guard user.id != viewer.user.id || role == .admin else {
                        return selfRefused(viewer, "remove your own administrator role")
                    }
                    try await admin.setRole(username: name, role: role)
                    return HTTPResponses.redirect("/admin/users/\(id)?done=role")
                case "password":
                    try await admin.setPassword(username: name, password: form["password"] ?? "")
                    return HTTPResponses.redirect("/admin/users/\(id)?done=password")
                case "second-factors":
                    try await admin.resetSecondFactors(username: name)
                    return HTTPResponses.redirect("/admin/users/\(id)?done=second-factors")
                default:
                    guard user.id != viewer.user.id else { return selfRefused(viewer, "delete your own account") }
                    _ = try await admin.deleteUser(username: name)
                    return HTTPResponses.redirect("/admin/users?done=deleted")
                }
            } catch let error as AdministrationError {
                return routes.page(
                    routes.browser.pages.messagePage(heading: "Not changed", message: error.description), status: .badRequest)
            }
        }
    }

    // MARK: Scopes

    func scopes(_ request: Request, error: String? = nil) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            routes.page(
                console.scopes(try await server.scopeCatalogue(), viewer: viewer, notice: routes.notice(request), error: error),
                status: error == nil ? .ok : .badRequest)
        }
    }

    func saveScope(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            do {
                try await server.administration.acting(as: viewer.user).addScope(
                    name: form["name"] ?? "", description: form["description"] ?? "")
                return HTTPResponses.redirect("/admin/scopes?done=scope")
            } catch let error as AdministrationError {
                return routes.page(
                    console.scopes(try await server.scopeCatalogue(), viewer: viewer, notice: nil, error: error.description),
                    status: .badRequest)
            }
        }
    }

    func confirmDeleteScope(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let name = (try? FormBody.query(request).get())?["name"] ?? ""
            let path = "/admin/scopes/delete?name=" + FormParameters.percentEncode(name)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            guard try await server.scopeCatalogue().contains(where: { $0.name == name }) else {
                return routes.notFound(viewer, "scope \(name)")
            }
            return routes.page(
                console.confirm(
                    heading: "Delete the scope \(name)?",
                    message: "Apps can no longer be registered for it. A scope that an app is registered for cannot be deleted.",
                    action: "/admin/scopes/delete", fields: [("name", name)], button: "Delete \(name)",
                    back: "/admin/scopes", viewer: viewer, section: .scopes))
        }
    }

    func deleteScope(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let name = form["name"] else { return routes.refused() }
            let path = "/admin/scopes/delete?name=" + FormParameters.percentEncode(name)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            do {
                try await server.administration.acting(as: viewer.user).deleteScope(name: name)
                return HTTPResponses.redirect("/admin/scopes?done=deleted")
            } catch let error as AdministrationError {
                return routes.page(
                    routes.browser.pages.messagePage(heading: "Not deleted", message: error.description), status: .badRequest)
            }
        }
    }
}
