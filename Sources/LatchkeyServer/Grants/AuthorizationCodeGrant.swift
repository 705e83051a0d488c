import Foundation
import LatchkeyCore

/// `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.5–4.6).
///
///
/// Every check runs before the code is consumed, so a request with a wrong verifier neither
/// burns the code (docs/threat-model.md T05) nor, on a used code, revokes anything (T11). A fully valid
/// request for a used code is a replay: the grant it produced is revoked (§4.1.2, T09).
struct AuthorizationCodeGrant: TokenGrant {
    let grantType = "authorization_code"
    let parameters: [GrantParameter] = [
        .required("code"), .optional("redirect_uri"), .optional("code_verifier"), .optional("resource"),
    ]
    let refusal = "A service client uses the client_credentials grant only."
    func permits(_ type: ClientType) -> Bool { type != .service }

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let (body, client) = (request.body, request.client)
        let code = request.required("code")
        let invalid = OAuthError.invalidGrant("The authorization code is invalid, expired or already used.")
        // A device request's grant waits as a code record too, for the device code grant only.
        guard let record = try await services.store.authorizationCode(presented: code),
            record.clientID == client.id, record.redirectURI != AuthorizationServer.deviceCodeGrantType
        else { throw invalid }

        // redirect_uri: "REQUIRED, if the redirect_uri parameter was included in the authorization
        // request ... and their values MUST be identical" (§4.1.3).
        let redirectURI = body["redirect_uri"]
        if let expected = record.redirectURIParameter {
            guard redirectURI == expected else {
                throw OAuthError.invalidGrant("The redirect_uri must be identical to the one in the authorization request.")
            }
        } else if let redirectURI, redirectURI != record.redirectURI {
            throw OAuthError.invalidGrant("The redirect_uri does not match the authorization request.")
        }

        // PKCE: present if and only if a challenge was sent (RFC 9700 §4.8.2 against downgrade).
        let verifierText = body["code_verifier"]
        if let challenge = record.codeChallenge.flatMap(CodeChallenge.init) {
            guard let verifierText else { throw OAuthError.invalidGrant("The code_verifier parameter is missing.") }
            guard let verifier = CodeVerifier(verifierText) else {
                throw OAuthError.invalidGrant("The code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.")
            }
            guard challenge.isSatisfied(by: verifier) else {
                throw OAuthError.invalidGrant("The code_verifier does not match the code_challenge.")
            }
        } else if verifierText != nil {
            throw OAuthError.invalidGrant("A code_verifier was sent but the authorization request had no code_challenge.")
        }

        // dpop_jkt (RFC 9449 §10): a code bound to a DPoP key is redeemed only with a proof by it,
        // so a stolen code is no use without the client's private key.
        if let bound = record.dpopJKT {
            guard let presented = request.keyThumbprint, ConstantTime.equals(presented, bound) else {
                throw OAuthError(
                    .invalidDPoPProof,
                    "This authorization code is bound to a DPoP key (dpop_jkt): send a DPoP proof made with that key.")
            }
        }

        return try await services.redeem(record, request: request, grantType: grantType)
    }
}
