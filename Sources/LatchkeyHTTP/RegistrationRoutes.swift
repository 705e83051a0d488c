import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Dynamic client registration: `POST /oauth2/register` (RFC 7591) and
/// `GET/PUT/DELETE /oauth2/register/{client_id}` (RFC 7592), JSON in and out, never cached.
struct RegistrationRoutes: Sendable {
    let server: AuthorizationServer

    func register(on router: Router<LatchkeyRequestContext>) {
        router.post("/oauth2/register") { request, context in
            try await call(request) { body in
                try await server.registration.register(
                    body, authorization: request.headers[.authorization], clientAddress: context.clientAddress)
            }
        }
        router.get("/oauth2/register/:client_id") { request, context in
            try await call(request) { _ in
                try await server.registration.readRegistration(
                    clientID: context.parameters.get("client_id") ?? "", authorization: request.headers[.authorization])
            }
        }
        router.put("/oauth2/register/:client_id") { request, context in
            try await call(request) { body in
                try await server.registration.updateRegistration(
                    clientID: context.parameters.get("client_id") ?? "", body,
                    authorization: request.headers[.authorization])
            }
        }
        router.delete("/oauth2/register/:client_id") { request, context in
            try await call(request) { _ in
                try await server.registration.deleteRegistration(
                    clientID: context.parameters.get("client_id") ?? "", authorization: request.headers[.authorization])
            }
        }
    }

    /// Reads a JSON body (for POST and PUT) and turns the answer into a response.
    private func call(_ request: Request, _ operation: ([UInt8]) async throws -> RegistrationResponse) async throws
        -> Response
    {
        var body: [UInt8] = []
        if request.method == .post || request.method == .put {
            guard let contentType = request.headers[.contentType],
                HeaderText.hasPrefixIgnoringASCIICase(Substring(contentType), "application/json")
            else {
                return HTTPResponses.json(
                    OAuthError.invalidRequest("Send the client metadata as application/json.").jsonBody,
                    status: .unsupportedMediaType)
            }
            do {
                body = Array(buffer: try await request.body.collect(upTo: 16 * 1024))
            } catch {
                return HTTPResponses.json(
                    OAuthError(.invalidClientMetadata, "The body is larger than 16 KiB.").jsonBody, status: .contentTooLarge)
            }
        }
        let answer = try await operation(body)
        var response = HTTPResponses.json(answer.json ?? "", status: .init(code: answer.status))
        if answer.json == nil { response.headers[.contentType] = nil }
        if let challenge = answer.wwwAuthenticate { response.headers[.wwwAuthenticate] = challenge }
        if let seconds = answer.retryAfter { response.headers[.retryAfter] = String(seconds) }
        return response
    }
}
