import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyResource

/// A request context that carries the access token a ``BearerTokenMiddleware`` accepted.
public protocol AccessTokenRequestContext: RequestContext {
    /// The accepted token; `nil` before the middleware ran.
    var accessToken: AccessTokenInfo? { get set }
}

/// A ready-made context for a resource server.
public struct ResourceRequestContext: AccessTokenRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var accessToken: AccessTokenInfo?
    public init(source: Source) { coreContext = .init(source: source) }
}

/// Lets a request through only with a bearer token that ``BearerTokenValidator`` accepts and that
/// holds `requiredScopes`; answers the others `401`/`403` with RFC 6750's `WWW-Authenticate`
/// (naming the RFC 9728 metadata), `401` `insufficient_user_authentication` (RFC 9470) for a
/// sign-in weaker or older than the validator's configuration requires, `400` for a malformed
/// header, `503` when the authorization server cannot be asked.
public struct BearerTokenMiddleware<Context: AccessTokenRequestContext>: RouterMiddleware {
    public let validator: BearerTokenValidator
    public let requiredScopes: [String]

    public init(_ validator: BearerTokenValidator, requiredScopes: [String] = []) {
        self.validator = validator
        self.requiredScopes = requiredScopes
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        // RFC 6750 §2.1 only: a token in the query or a form body is not looked at.
        let authorization = request.headers[values: .authorization]
        guard authorization.count <= 1 else {
            return Self.refusal(
                BearerChallenge(
                    status: 400, error: "invalid_request", errorDescription: "Send one Authorization header.", scope: [],
                    resourceMetadata: validator.configuration.metadataURL))
        }
        let proofs = request.headers[values: HTTPField.Name("DPoP")!]
        guard proofs.count <= 1 else {
            return Self.refusal(
                BearerChallenge(
                    status: 400, error: "invalid_request", errorDescription: "Send one DPoP header.", scope: [],
                    resourceMetadata: validator.configuration.metadataURL))
        }
        // htu: the resource's public origin (its identifier's) and this request's path, so a
        // reverse proxy in front does not change what the proof must name.
        let origin = URLComponents(string: validator.configuration.resource).map { components in
            var origin = components
            origin.path = ""
            origin.query = nil
            origin.fragment = nil
            return origin.string ?? ""
        }
        let dpop = origin.map { DPoPRequest(proof: proofs.first, method: request.method.rawValue, url: $0 + request.uri.path) }
        switch await validator.validate(authorization: authorization.first, requiredScopes: requiredScopes, dpop: dpop) {
        case .valid(let info):
            var context = context
            context.accessToken = info
            return try await next(request, context)
        case .rejected(let challenge):
            return Self.refusal(challenge)
        case .unavailable:
            return Response(
                status: .serviceUnavailable, headers: [.retryAfter: "5", .contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"temporarily_unavailable"}"#)))
        }
    }

    static func refusal(_ challenge: BearerChallenge) -> Response {
        Response(
            status: HTTPResponse.Status(code: challenge.status),
            headers: [.wwwAuthenticate: challenge.wwwAuthenticate, .contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: challenge.jsonBody)))
    }
}

extension Router {
    /// Serves the resource's RFC 9728 metadata at its well-known address
    /// (`/.well-known/oauth-protected-resource` followed by the resource's path).
    public func addProtectedResourceMetadata(_ configuration: ResourceServerConfiguration) {
        let body = ProtectedResourceMetadata(configuration).jsonBody
        get(RouterPath(configuration.metadataPath)) { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }
}
