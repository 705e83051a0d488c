import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The console's resources page (RFC 8707): administrators only. The URI goes in the query and
/// the form, never the path.
struct ConsoleResourceRoutes: Sendable {
    let routes: ConsoleRoutes
    var server: AuthorizationServer { routes.server }
    var console: ConsoleRenderer { routes.console }

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin/resources") { request, _ in try await list(request) }
        router.post("/admin/resources") { request, _ in try await add(request) }
        router.get("/admin/resources/delete") { request, _ in try await confirmDelete(request) }
        router.post("/admin/resources/delete") { request, _ in try await delete(request) }
    }

    func list(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            routes.page(
                console.resources(
                    try await server.console.resources(), viewer: viewer, notice: routes.notice(request), error: nil))
        }
    }

    func add(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            do {
                guard let format = AccessTokenFormat(rawValue: form["token_format"] ?? "opaque") else {
                    throw AdministrationError("Choose opaque or jwt access tokens.", field: "token_format")
                }
                guard let algorithm = SigningAlgorithm(rawValue: form["access_token_signing_alg"] ?? "RS256") else {
                    throw AdministrationError("Choose RS256 or ES256.", field: "access_token_signing_alg")
                }
                var lifetime: Int?
                if let text = form["access_token_lifetime"] {
                    guard let seconds = Int(text) else {
                        throw AdministrationError("The lifetime is a number of seconds.", field: "access_token_lifetime")
                    }
                    lifetime = seconds
                }
                _ = try await server.administration.acting(as: viewer.user).addResource(
                    ResourceRegistration(
                        uri: form["resource"] ?? "", name: form["name"] ?? "",
                        scopes: (form["scopes"] ?? "").split(separator: " ").map(String.init), tokenFormat: format,
                        accessTokenLifetime: lifetime, tokenSigningAlgorithm: algorithm))
                return HTTPResponses.redirect("/admin/resources?done=resource")
            } catch let error as AdministrationError {
                return routes.page(
                    console.resources(
                        try await server.console.resources(), viewer: viewer, notice: nil, error: error.description),
                    status: .badRequest)
            }
        }
    }

    func confirmDelete(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let uri = (try? FormBody.query(request).get())?["resource"] ?? ""
            let path = "/admin/resources/delete?resource=" + FormParameters.percentEncode(uri)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            guard let resource = try await server.console.resource(uri: uri) else {
                return routes.notFound(viewer, "resource \(uri)")
            }
            return routes.page(
                console.confirm(
                    heading: "Delete the resource \(resource.name)?",
                    message:
                        "Requests that name \(resource.uri) will be refused. Tokens already issued for it last until they expire.",
                    action: "/admin/resources/delete", fields: [("resource", resource.uri)], button: "Delete \(resource.name)",
                    back: "/admin/resources", viewer: viewer, section: .resources))
        }
    }

    func delete(_ request: Request) async throws -> Response {
        try await routes.withForm(request, .administration) { viewer, form in
            guard let uri = form["resource"] else { return routes.refused() }
            let path = "/admin/resources/delete?resource=" + FormParameters.percentEncode(uri)
            if let redirect = routes.needsRecentPassword(viewer, next: path) { return redirect }
            do {
                try await server.administration.acting(as: viewer.user).deleteResource(uri: uri)
                return HTTPResponses.redirect("/admin/resources?done=deleted")
            } catch let error as AdministrationError {
                return routes.page(
                    routes.browser.pages.messagePage(heading: "Not deleted", message: error.description), status: .badRequest)
            }
        }
    }
}
