import Foundation
import LatchkeyCore

/// `POST /oauth2/revoke` (RFC 7009): reads and revokes tokens of the client that authenticates.
public struct RevocationEndpoint: Sendable {
    let clientAuthentication: ClientAuthentication
    let tokens: any GrantStore
    let context: ServerContext

    /// `POST /oauth2/revoke` (RFC 7009). The client authenticates as at the token endpoint.
    /// Revoking a refresh token ends its grant and every access token of it (§2.1 SHOULD); revoking
    /// an access token ends that token. An unknown token, or another client's, changes nothing and
    /// answers 200 all the same, so the endpoint tells nothing (§2.2, docs/threat-model.md decision 5).
    /// `token_type_hint` is only a hint: both kinds are searched.
    public func revoke(_ request: TokenRequest) async -> Result<Void, TokenEndpointError> {
        do {
            let (client, value) = try await clientAuthentication.clientAndToken(request, at: "/oauth2/revoke")
            let now = context.now
            do {
                guard let token = try await tokens.token(presented: value), token.clientID == client.id else {
                    return .success(())
                }
                switch token.kind {
                case .refresh: try await tokens.revokeGrant(id: token.grantID, at: now)
                case .access: try await tokens.revokeToken(hash: token.hash, at: now)
                }
                context.event(
                    .tokenRevoked,
                    ["client_id": "\(client.id)", "kind": "\(token.kind.rawValue)", "grant_id": "\(token.grantID)"])
                return .success(())
            } catch {
                // I4: a 200 means the revocation was committed; a failure is never reported as success.
                context.logger.error("store failure at the revocation endpoint", metadata: ["error": "\(error)"])
                throw TokenEndpointError(AuthorizationServer.unavailable)
            }
        } catch let error as TokenEndpointError {
            return .failure(error)
        } catch {
            return .failure(TokenEndpointError(AuthorizationServer.unavailable))
        }
    }
}
