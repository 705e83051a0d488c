import Foundation
import LatchkeyCore

/// The claims of a JWT access token (RFC 9068 §2.2), written directly as JSON.
struct JWTAccessTokenClaims {
    var iss: String
    /// One resource URI, or several (then an array).
    var aud: [String]
    var exp: Int
    var iat: Int
    /// The user, or for client credentials the client itself (§2.2).
    var sub: String
    var clientID: String
    /// Unique per token, so a resource server may detect a replay.
    var jti: String
    var scope: String
    var authTime: Int?
    /// `acr` and `amr` (RFC 9068 §2.2.1): how the user signed in; absent for a client's own token.
    var amr: AuthenticationMethods?
    /// `cnf.jkt` (RFC 9449 §6.1): the DPoP key the token is bound to.
    var keyThumbprint: String?
    /// `act` (RFC 8693 §4.1), as JSON: who acts for the subject, for an exchanged token.
    var actor: String?

    var jsonBody: String {
        var body = #"{"iss":"# + JSONText.quote(iss)
        body +=
            #","aud":"#
            + (aud.count == 1 ? JSONText.quote(aud[0]) : "[" + aud.map(JSONText.quote).joined(separator: ",") + "]")
        body += #","exp":"# + String(exp) + #","iat":"# + String(iat)
        body += #","sub":"# + JSONText.quote(sub) + #","client_id":"# + JSONText.quote(clientID)
        body += #","jti":"# + JSONText.quote(jti) + #","scope":"# + JSONText.quote(scope)
        if let authTime { body += #","auth_time":"# + String(authTime) }
        if let amr {
            body += #","acr":"# + JSONText.quote(amr.level.rawValue)
            body += #","amr":["# + amr.values.map(JSONText.quote).joined(separator: ",") + "]"
        }
        if let keyThumbprint { body += #","cnf":{"jkt":"# + JSONText.quote(keyThumbprint) + "}" }
        if let actor { body += #","act":"# + actor }
        return body + "}"
    }
}

extension AuthorizationServer {
    /// The `typ` header of a JWT access token (RFC 9068 §2.1), which keeps it from passing for
    /// an ID token and the other way round.
    public static let jwtAccessTokenType = "at+jwt"
}

extension TokenIssuance {
    /// A JWT access token (RFC 9068), signed with the server's current key for the audience's
    /// algorithm: ES256 when every resource in it chose ES256, else RS256 (the algorithm every
    /// resource server must accept, §2.1).
    func jwtAccessToken(
        client: Client, userID: UserID?, scope: ScopeSet, audience: [ProtectedResource], authTime: Date?,
        amr: AuthenticationMethods? = nil, issuedAt: Date, lifetime: TimeInterval, keyThumbprint: String? = nil,
        actor: String? = nil
    ) async throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims = JWTAccessTokenClaims(
            iss: issuer, aud: audience.map(\.uri), exp: iat + Int(lifetime), iat: iat,
            sub: userID?.rawValue ?? client.id.rawValue, clientID: client.id.rawValue,
            jti: RandomToken.randomBase64URL(byteCount: 16), scope: scope.description,
            authTime: authTime.map { Int($0.timeIntervalSince1970) }, amr: amr, keyThumbprint: keyThumbprint, actor: actor)
        let algorithm: SigningAlgorithm =
            !audience.isEmpty && audience.allSatisfy({ $0.tokenSigningAlgorithm == .es256 }) ? .es256 : .rs256
        return try await signingKeys.signer(for: algorithm, at: issuedAt).sign(
            payloadJSON: claims.jsonBody, type: AuthorizationServer.jwtAccessTokenType)
    }
}
