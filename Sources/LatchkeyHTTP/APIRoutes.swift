import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The JSON half: metadata, token, userinfo.
struct APIRoutes: Sendable {
    let server: AuthorizationServer

    func metadata() async throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = try encoder.encode(try await server.metadata())
        var response = HTTPResponses.json(String(decoding: body, as: UTF8.self))
        response.headers[.cacheControl] = "max-age=300"
        response.headers[.pragma] = nil
        return response
    }

    /// `GET /readyz`: 200 when the store answers and is migrated, else 503 with `Retry-After`, so a
    /// load balancer sends no traffic to an instance that would only answer 503.
    func readiness() async -> Response {
        guard await server.isReady() else {
            return HTTPResponses.json(#"{"status":"unavailable"}"#, status: .serviceUnavailable, extra: [.retryAfter: "5"])
        }
        return HTTPResponses.json(#"{"status":"ready"}"#)
    }

    /// `POST /oauth2/token`.
    func token(_ request: Request) async -> Response {
        await clientRequest(request) { await server.tokenEndpoint.token($0).map(\.jsonBody) }
    }

    /// `POST /oauth2/par`: `201 Created` with the `request_uri` (RFC 9126 §2.2).
    func pushAuthorizationRequest(_ request: Request) async -> Response {
        var response = await clientRequest(request) {
            await server.pushedAuthorization.pushAuthorizationRequest($0).map(\.jsonBody)
        }
        if response.status == .ok { response.status = .created }
        return response
    }

    /// `POST /oauth2/device_authorization` (RFC 8628 §3.1, §3.2).
    func authorizeDevice(_ request: Request) async -> Response {
        await clientRequest(request) { await server.deviceAuthorization.authorizeDevice($0).map(\.jsonBody) }
    }

    /// `POST /oauth2/revoke`: 200 with an empty body (RFC 7009 §2.2).
    func revoke(_ request: Request) async -> Response {
        var response = await clientRequest(request) { await server.revocation.revoke($0).map { "" } }
        if response.status == .ok { response.headers[.contentType] = nil }  // empty, so not JSON
        return response
    }

    /// `POST /oauth2/introspect` (RFC 7662 §2.2).
    func introspect(_ request: Request) async -> Response {
        await clientRequest(request) { await server.introspection.introspect($0).map(\.jsonBody) }
    }

    /// The shared shape of the token, revocation and introspection endpoints: a form body, no
    /// parameters in the URI (credentials there are refused, RFC 6749 §2.3.1), JSON back, never cached.
    private func clientRequest(
        _ request: Request, _ handle: (TokenRequest) async -> Result<String, TokenEndpointError>
    ) async -> Response {
        if let query = request.uri.query, !query.isEmpty {
            return HTTPResponses.tokenError(
                TokenEndpointError(.invalidRequest("Send the parameters in the body, not the URI.")))
        }
        let body: FormParameters
        switch await FormBody.read(request) {
        case .failure(let error):
            var response = HTTPResponses.tokenError(TokenEndpointError(error))
            if error == FormBody.tooLarge { response.status = .contentTooLarge }
            return response
        case .success(let value): body = value
        }
        let proofs = request.headers[values: .dpop]
        guard proofs.count <= 1 else {
            return HTTPResponses.tokenError(
                TokenEndpointError(OAuthError(.invalidDPoPProof, "Send one DPoP header, not several.")))
        }
        switch await handle(TokenRequest(body: body, authorization: request.headers[.authorization], dpop: proofs.first)) {
        case .success(let json): return HTTPResponses.json(json)
        case .failure(let failure): return HTTPResponses.tokenError(failure)
        }
    }

    /// `GET` and `POST /userinfo` (OpenID Connect Core §5.3; RFC 6750 errors).
    func userInfo(_ request: Request) async throws -> Response {
        // RFC 6750 §2: the header, or for POST a form body's access_token (§2.2), never both; a
        // token in the query is not read (it would leak into logs and caches).
        var formToken: String?
        if let contentType = request.headers[.contentType],
            HeaderText.hasPrefixIgnoringASCIICase(Substring(contentType), "application/x-www-form-urlencoded"),
            case .success(let form) = await FormBody.read(request), let token = form["access_token"]
        {
            guard request.headers[.authorization] == nil, request.method == .post, !form.isRepeated("access_token") else {
                return Self.bearerError(.invalidRequest("Send the access token one way only."))
            }
            formToken = token
        }
        let proofs = request.headers[values: .dpop]
        guard proofs.count <= 1 else {
            return Self.bearerError(.invalidDPoPProof("Send one DPoP header, not several."), dpop: true)
        }
        switch try await server.userInfo.claims(
            authorization: request.headers[.authorization], formToken: formToken, dpop: proofs.first,
            method: request.method.rawValue)
        {
        case .success(let info):
            return HTTPResponses.json(info.jsonBody)
        case .failure(let error):
            // Only a refusal needs to know the scheme, for its challenge.
            let usedDPoP = request.headers[.authorization].map { HeaderText.credentials($0, scheme: "DPoP") != nil } ?? false
            return Self.bearerError(error, dpop: usedDPoP, offerDPoP: true)
        }
    }

    /// RFC 6750 §3: the challenge, with an error code only when a token was presented; for a
    /// request made with `Authorization: DPoP`, RFC 9449 §7.1's `DPoP` challenge instead. Where
    /// DPoP is accepted (`offerDPoP`), a request without a token gets both challenges.
    static func bearerError(_ error: BearerError, dpop: Bool = false, offerDPoP: Bool = false) -> Response {
        let algorithms = "algs=\"" + DPoPProof.algorithms.joined(separator: " ") + "\""
        let realm = dpop ? "DPoP " + algorithms : "Bearer realm=\"latchkey\""
        let (status, challenge, body): (HTTPResponse.Status, String, OAuthError?) =
            switch error {
            case .missing: (.unauthorized, realm, nil)
            case .invalidToken:
                (
                    .unauthorized, realm + ", error=\"invalid_token\"",
                    OAuthError(.invalidToken, "The access token is invalid, expired or revoked.")
                )
            case .insufficientScope(let scope):
                (
                    .forbidden, realm + ", error=\"insufficient_scope\", scope=\"\(scope)\"",
                    OAuthError(.insufficientScope, "The access token lacks the \(scope) scope.")
                )
            case .invalidRequest(let message):
                (.badRequest, realm + ", error=\"invalid_request\"", OAuthError.invalidRequest(message))
            case .invalidDPoPProof(let message):
                (
                    .unauthorized, "DPoP " + algorithms + ", error=\"invalid_dpop_proof\"",
                    OAuthError(.invalidDPoPProof, message)
                )
            case .useDPoPNonce:
                (
                    .unauthorized, "DPoP " + algorithms + ", error=\"use_dpop_nonce\"",
                    OAuthError(.useDPoPNonce, "Make the DPoP proof again with the nonce in the DPoP-Nonce header.")
                )
            }
        var extra: HTTPFields = [.wwwAuthenticate: challenge]
        if case .missing = error, !dpop, offerDPoP {
            extra.append(HTTPField(name: .wwwAuthenticate, value: "DPoP " + algorithms))
        }
        if case .useDPoPNonce(let nonce) = error { extra[.dpopNonce] = nonce }
        return HTTPResponses.json(body?.jsonBody ?? "{}", status: status, extra: extra)
    }
}
