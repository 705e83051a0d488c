import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The admin API (`/admin/api/…`, docs/openapi.yaml): one line a route, over
/// the `api…` operations of `Console` (`server.console`). Every call needs a bearer token with the scope
/// `latchkey:admin` that a service client obtained by client credentials (RFC 6750 errors).
struct AdminAPIRoutes: Sendable {
    let server: AuthorizationServer

    /// JSON request bodies are small: an app object with long consent text fits in 64 KiB.
    static let bodyLimit = 64 * 1024

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin/api/clients") { request, _ in try await call(request) { _, _ in try await server.console.apiClients() }
        }
        router.post("/admin/api/clients") { request, _ in
            try await call(request) { client, body in try await server.console.apiRegisterClient(body, by: client) }
        }
        router.get("/admin/api/clients/:id") { request, context in
            try await call(request) { _, _ in try await server.console.apiClient(id: context.parameters.get("id") ?? "") }
        }
        router.put("/admin/api/clients/:id") { request, context in
            try await call(request) { client, body in
                try await server.console.apiReplaceClient(id: context.parameters.get("id") ?? "", body, by: client)
            }
        }
        router.delete("/admin/api/clients/:id") { request, context in
            try await call(request) { client, _ in
                try await server.console.apiDeleteClient(id: context.parameters.get("id") ?? "", by: client)
            }
        }
        router.get("/admin/api/users") { request, _ in try await call(request) { _, _ in try await server.console.apiUsers() } }
        router.post("/admin/api/users") { request, _ in
            try await call(request) { client, body in try await server.console.apiCreateUser(body, by: client) }
        }
        router.get("/admin/api/users/:id") { request, context in
            try await call(request) { _, _ in try await server.console.apiUser(id: context.parameters.get("id") ?? "") }
        }
        router.patch("/admin/api/users/:id") { request, context in
            try await call(request) { client, body in
                try await server.console.apiUpdateUser(id: context.parameters.get("id") ?? "", body, by: client)
            }
        }
        router.delete("/admin/api/users/:id") { request, context in
            try await call(request) { client, _ in
                try await server.console.apiDeleteUser(id: context.parameters.get("id") ?? "", by: client)
            }
        }
        router.get("/admin/api/scopes") { request, _ in try await call(request) { _, _ in try await server.console.apiScopes() } }
        router.post("/admin/api/scopes") { request, _ in
            try await call(request) { client, body in try await server.console.apiSaveScope(body, by: client) }
        }
        router.delete("/admin/api/scopes/:name") { request, context in
            try await call(request) { client, _ in
                try await server.console.apiDeleteScope(name: context.parameters.get("name") ?? "", by: client)
            }
        }
        router.get("/admin/api/resources") { request, _ in
            try await call(request) { _, _ in try await server.console.apiResources() }
        }
        router.post("/admin/api/resources") { request, _ in
            try await call(request) { client, body in try await server.console.apiAddResource(body, by: client) }
        }
        router.delete("/admin/api/resources") { request, _ in
            try await call(request) { client, _ in
                try await server.console.apiDeleteResource(uri: query(request)["resource"], by: client)
            }
        }
        router.get("/admin/api/providers") { request, _ in
            try await call(request) { _, _ in try await server.console.apiProviders() }
        }
        router.post("/admin/api/providers") { request, _ in
            try await call(request) { client, body in try await server.console.apiAddProvider(body, by: client) }
        }
        router.get("/admin/api/providers/:name") { request, context in
            try await call(request) { _, _ in try await server.console.apiProvider(name: context.parameters.get("name") ?? "") }
        }
        router.patch("/admin/api/providers/:name") { request, context in
            try await call(request) { client, body in
                try await server.console.apiUpdateProvider(name: context.parameters.get("name") ?? "", body, by: client)
            }
        }
        router.delete("/admin/api/providers/:name") { request, context in
            try await call(request) { client, _ in
                try await server.console.apiDeleteProvider(name: context.parameters.get("name") ?? "", by: client)
            }
        }
        router.get("/admin/api/grants") { request, _ in
            try await call(request) { _, _ in try await server.console.apiGrants(userID: query(request)["user_id"]) }
        }
        router.delete("/admin/api/grants") { request, _ in
            try await call(request) { client, _ in
                let query = query(request)
                return try await server.console.apiRevokeGrants(
                    userID: query["user_id"], clientID: query["client_id"], by: client)
            }
        }
    }

    private func query(_ request: Request) -> FormParameters { (try? FormBody.query(request).get()) ?? FormParameters([]) }

    /// Authenticates the caller, reads the body (JSON, at most ``bodyLimit``), runs `operation`.
    private func call(
        _ request: Request, _ operation: (Client, [UInt8]) async throws -> AdminAPIResponse
    ) async throws -> Response {
        let caller: Client
        switch try await server.console.adminAPIClient(authorization: request.headers[.authorization]) {
        case .failure(let error): return APIRoutes.bearerError(error)
        case .success(let client): caller = client
        }
        var body: [UInt8] = []
        if request.method == .post || request.method == .put || request.method == .patch {
            guard let contentType = request.headers[.contentType],
                HeaderText.hasPrefixIgnoringASCIICase(Substring(contentType), "application/json")
            else {
                return Self.response(.error(415, "invalid_request", "Send the body as application/json."))
            }
            do {
                body = Array(buffer: try await request.body.collect(upTo: Self.bodyLimit))
            } catch {
                return Self.response(.error(413, "invalid_request", "The body is larger than 64 KiB."))
            }
        }
        return Self.response(try await operation(caller, body))
    }

    static func response(_ answer: AdminAPIResponse) -> Response {
        var response = HTTPResponses.json(answer.json ?? "", status: .init(code: answer.status))
        if answer.json == nil { response.headers[.contentType] = nil }
        return response
    }
}
