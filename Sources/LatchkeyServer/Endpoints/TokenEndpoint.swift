import Foundation
import LatchkeyCore

/// A parsed `POST /oauth2/token` request.
public struct TokenRequest: Sendable {
    /// The form body.
    public var body: FormParameters
    /// The `Authorization` header, if any.
    public var authorization: String?
    /// The `DPoP` header (RFC 9449 §4), if any; more than one is refused before this is made.
    public var dpop: String?
    public init(body: FormParameters, authorization: String?, dpop: String? = nil) {
        self.body = body
        self.authorization = authorization
        self.dpop = dpop
    }
}

/// `POST /oauth2/token` (RFC 6749 §3.2): authenticates the client, checks a DPoP proof, and hands
/// the request to its grant, which gets only ``TokenGrantServices``.
public struct TokenEndpoint: Sendable {
    let clientAuthentication: ClientAuthentication
    let dpop: DPoPVerifier
    /// The grants, by `grant_type` (``GrantRegistry/standard`` unless a test narrows them).
    let grants: GrantRegistry
    let services: TokenGrantServices

    /// `POST /oauth2/token` (RFC 6749 §3.2): authenticates the client, then hands the request to the
    /// handler of its `grant_type`. A store failure is `temporarily_unavailable` (503), never a
    /// credential error (docs/threat-model.md I5).
    public func token(_ request: TokenRequest) async -> Result<TokenResponse, TokenEndpointError> {
        do {
            return .success(try await handleToken(request))
        } catch {
            return .failure(error)
        }
    }

    private func handleToken(_ request: TokenRequest) async throws(TokenEndpointError) -> TokenResponse {
        if let name = request.body.repeatedSingleValuedNames.first {
            throw TokenEndpointError(.invalidRequest("The \(name) parameter was given more than once."))
        }
        guard let grantType = request.body["grant_type"] else {
            throw TokenEndpointError(.invalidRequest("The grant_type parameter is missing."))
        }
        // The DPoP proof first: a client asked for a server nonce (`use_dpop_nonce`) sends the same
        // body again, and a client assertion in it must not have been used up by the first try.
        var keyThumbprint: String?
        if let proof = request.dpop {
            let checked: Result<String, DPoPFailure>
            do { checked = try await dpop.verify(proof, method: "POST", path: "/oauth2/token") } catch {
                services.context.logger.error("store failure checking a DPoP proof", metadata: ["error": "\(error)"])
                throw TokenEndpointError(AuthorizationServer.unavailable)
            }
            switch checked {
            case .success(let thumbprint): keyThumbprint = thumbprint
            case .failure(let failure):
                throw TokenEndpointError(
                    failure.error, usedBasicAuthentication: request.authorization != nil, dpopNonce: failure.nonce)
            }
        }
        let client = try await clientAuthentication.authenticate(
            request.body, authorization: request.authorization, at: "/oauth2/token")
        do {
            return try await grants.issue(
                grantType: grantType, body: request.body, client: client, keyThumbprint: keyThumbprint, using: services)
        } catch let error as OAuthError {
            throw TokenEndpointError(error, usedBasicAuthentication: request.authorization != nil)
        } catch {
            services.context.logger.error("store failure at the token endpoint", metadata: ["error": "\(error)"])
            throw TokenEndpointError(AuthorizationServer.unavailable)
        }
    }
}
