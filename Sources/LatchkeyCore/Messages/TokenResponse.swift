/// A successful token response (RFC 6749 §5.1) with Fitbit's `user_id` (docs/design.md §2).
public struct TokenResponse: Sendable, Equatable, Codable {
    /// `access_token`.
    public var accessToken: String
    /// `token_type`: always `Bearer` (RFC 6750).
    public var tokenType: String
    /// `expires_in`: the access token's lifetime in seconds.
    public var expiresIn: Int
    /// `refresh_token`, when one was issued.
    public var refreshToken: String?
    /// `scope`: what was actually granted, which may be less than was asked (§3.3).
    public var scope: String
    /// `user_id`: the resource owner who authorized the grant; absent for client credentials.
    public var userID: String?
    /// `id_token` (OpenID Connect Core §3.1.3.3): when the grant includes the `openid` scope.
    public var idToken: String?
    /// `issued_token_type` (RFC 8693 §2.2.1): what a token exchange issued.
    public var issuedTokenType: String?

    public init(
        accessToken: String, tokenType: String = "Bearer", expiresIn: Int, refreshToken: String?, scope: String,
        userID: String?, idToken: String? = nil
    ) {
        self.idToken = idToken
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.userID = userID
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case scope
        case userID = "user_id"
        case idToken = "id_token"
        case issuedTokenType = "issued_token_type"
    }

    /// The JSON body, written directly (the token endpoint is a hot path).
    public var jsonBody: String {
        var body = #"{"access_token":"# + JSONText.quote(accessToken)
        body += #","token_type":"# + JSONText.quote(tokenType)
        body += #","expires_in":"# + String(expiresIn)
        if let refreshToken { body += #","refresh_token":"# + JSONText.quote(refreshToken) }
        body += #","scope":"# + JSONText.quote(scope)
        if let userID { body += #","user_id":"# + JSONText.quote(userID) }
        if let idToken { body += #","id_token":"# + JSONText.quote(idToken) }
        if let issuedTokenType { body += #","issued_token_type":"# + JSONText.quote(issuedTokenType) }
        return body + "}"
    }
}
