import Foundation
import LatchkeyCore

/// An RFC 7662 §2.2 introspection response. An inactive token is exactly `{"active":false}`.
public struct IntrospectionResponse: Sendable, Equatable {
    public var active: Bool
    public var scope: String?
    public var clientID: String?
    public var userID: String?
    public var tokenType: String?
    public var expiresAt: Date?
    public var issuedAt: Date?
    /// `aud`: the resources the token is for (RFC 8707); one string, or an array of several,
    /// left out when the token has none.
    public var audience: [String] = []
    /// `iss`: the server that issued the token.
    public var issuer: String?
    /// `cnf.jkt` (RFC 9449 §6.2): the DPoP key the token is bound to.
    public var keyThumbprint: String?
    /// `acr` and `auth_time` (RFC 9470 §6.2): how and when the user signed in for the token's
    /// grant, so a resource server can ask for a stronger or fresher sign-in; a user's tokens only.
    public var acr: String?
    public var authTime: Date?
    /// `act` (RFC 8693 §4.1), as JSON: who acts for the subject of an exchanged token.
    public var actor: String?

    public static let inactive = IntrospectionResponse(active: false)

    public var jsonBody: String {
        guard active else { return #"{"active":false}"# }
        var fields = [#""active":true"#]
        if let scope { fields.append(#""scope":"# + JSONText.quote(scope)) }
        if let clientID { fields.append(#""client_id":"# + JSONText.quote(clientID)) }
        if let userID {
            fields.append(#""sub":"# + JSONText.quote(userID))
            fields.append(#""user_id":"# + JSONText.quote(userID))
        }
        if let tokenType { fields.append(#""token_type":"# + JSONText.quote(tokenType)) }
        if let expiresAt { fields.append(#""exp":"# + String(Int(expiresAt.timeIntervalSince1970))) }
        if let issuedAt { fields.append(#""iat":"# + String(Int(issuedAt.timeIntervalSince1970))) }
        if audience.count == 1 {
            fields.append(#""aud":"# + JSONText.quote(audience[0]))
        } else if !audience.isEmpty {
            fields.append(#""aud":["# + audience.map(JSONText.quote).joined(separator: ",") + "]")
        }
        if let issuer { fields.append(#""iss":"# + JSONText.quote(issuer)) }
        if let keyThumbprint { fields.append(#""cnf":{"jkt":"# + JSONText.quote(keyThumbprint) + "}") }
        if let acr { fields.append(#""acr":"# + JSONText.quote(acr)) }
        if let authTime { fields.append(#""auth_time":"# + String(Int(authTime.timeIntervalSince1970))) }
        if let actor { fields.append(#""act":"# + actor) }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// `POST /oauth2/introspect` (RFC 7662): reads tokens for the client that authenticates.
public struct IntrospectionEndpoint: Sendable {
    let clientAuthentication: ClientAuthentication
    let tokens: any GrantStore
    let context: ServerContext

    /// `POST /oauth2/introspect` (RFC 7662) for resource servers: a confidential client (`web`,
    /// `service`) authenticated as at the token endpoint; public clients are refused so they cannot
    /// scan for tokens (§4).
    ///
    /// What a caller may learn (§4, docs/threat-model.md RV5, RV6):
    /// - An access token is active for a client an administrator registered (a resource server),
    ///   and for any confidential client when the token was issued to it. A personal or
    ///   self-registered client, which any user may make, learns nothing of other clients' tokens.
    /// - A refresh token is active only for the client it was issued to, and never carries
    ///   `token_type`: it is not an access token, and a resource server must not take it for one.
    public func introspect(_ request: TokenRequest) async -> Result<IntrospectionResponse, TokenEndpointError> {
        do {
            let (client, value) = try await clientAuthentication.clientAndToken(request, at: "/oauth2/introspect")
            guard client.type.isConfidential else {
                throw TokenEndpointError(
                    .invalidClient("Only confidential clients (resource servers) may introspect tokens."),
                    usedBasicAuthentication: request.authorization != nil)
            }
            guard let token = try await tokens.token(presented: value), token.isActive(at: context.now),
                Self.mayIntrospect(token, caller: client)
            else {
                return .success(.inactive)
            }
            return .success(
                IntrospectionResponse(
                    active: true, scope: token.scope.description, clientID: token.clientID.rawValue,
                    userID: token.userID?.rawValue,
                    // token_type is an RFC 6749 §7.1 access token type; a refresh token has none.
                    tokenType: token.kind == .access ? (token.keyThumbprint == nil ? "Bearer" : "DPoP") : nil,
                    expiresAt: token.expiresAt, issuedAt: token.createdAt, audience: token.audience.uris, issuer: context.issuer,
                    keyThumbprint: token.keyThumbprint,
                    acr: token.userID == nil ? nil : (token.grantAMR ?? .password).level.rawValue,
                    authTime: token.userID == nil ? nil : token.grantAuthTime, actor: token.grantActor))
        } catch let error as TokenEndpointError {
            return .failure(error)
        } catch {
            context.logger.error("store failure at the introspection endpoint", metadata: ["error": "\(error)"])
            return .failure(TokenEndpointError(AuthorizationServer.unavailable))
        }
    }

    /// Whether `caller` may see `token` as active (see ``introspect(_:)``).
    static func mayIntrospect(_ token: TokenRecord, caller: Client) -> Bool {
        if token.clientID == caller.id { return true }
        guard token.kind == .access else { return false }
        return caller.registration == .administrator && caller.ownerUserID == nil
    }
}
