import Foundation
import LatchkeyCore

/// The claims `/userinfo` returns (OpenID Connect Core §5.3.2): `sub` always; with `profile`,
/// `name`, `preferred_username` and `updated_at` (and Latchkey's own `username` and `user_id`);
/// with `email`, `email` and `email_verified`. Members without a value are left out.
public struct UserInfo: Sendable, Equatable, Codable {
    public var sub: String
    public var userID: String?
    public var username: String?
    public var name: String?
    public var preferredUsername: String?
    /// Seconds since 1970.
    public var updatedAt: Int?
    public var email: String?
    public var emailVerified: Bool?

    public init(
        sub: String, userID: String? = nil, username: String? = nil, name: String? = nil, preferredUsername: String? = nil,
        updatedAt: Int? = nil, email: String? = nil, emailVerified: Bool? = nil
    ) {
        self.sub = sub
        self.userID = userID
        self.username = username
        self.name = name
        self.preferredUsername = preferredUsername
        self.updatedAt = updatedAt
        self.email = email
        self.emailVerified = emailVerified
    }

    /// The claims `user` shares under `scope`.
    public init(user: User, scope: ScopeSet) {
        self.init(sub: user.id.rawValue)
        if scope.contains("profile") {
            userID = user.id.rawValue
            username = user.username.rawValue
            preferredUsername = user.username.rawValue
            name = user.displayName
            updatedAt = Int((user.updatedAt ?? user.createdAt).timeIntervalSince1970)
        }
        if scope.contains("email"), let email = user.email {
            self.email = email
            emailVerified = user.emailVerified
        }
    }

    enum CodingKeys: String, CodingKey {
        case sub, username, name, email
        case userID = "user_id"
        case preferredUsername = "preferred_username"
        case updatedAt = "updated_at"
        case emailVerified = "email_verified"
    }

    /// The claims as a JSON object, keys sorted, unset members left out (what `JSONEncoder` with
    /// `.sortedKeys` writes, without its cost on this hot path).
    public var jsonBody: String {
        // `sub` always comes after the members that sort before it, so each of those ends in a comma.
        var body = "{"
        if let email { body += #""email":"# + JSONText.quote(email) + "," }
        if let emailVerified { body += #""email_verified":"# + (emailVerified ? "true," : "false,") }
        if let name { body += #""name":"# + JSONText.quote(name) + "," }
        if let preferredUsername { body += #""preferred_username":"# + JSONText.quote(preferredUsername) + "," }
        body += #""sub":"# + JSONText.quote(sub)
        if let updatedAt { body += #","updated_at":"# + String(updatedAt) }
        if let userID { body += #","user_id":"# + JSONText.quote(userID) }
        if let username { body += #","username":"# + JSONText.quote(username) }
        return body + "}"
    }
}

/// Why a bearer request was refused (RFC 6750 §3).
public enum BearerError: Error, Sendable, Equatable {
    /// No token was presented: 401 with a bare challenge.
    case missing
    /// 401 `invalid_token`.
    case invalidToken
    /// 403 `insufficient_scope`, naming the scope needed.
    case insufficientScope(String)
    /// 400 `invalid_request`.
    case invalidRequest(String)
    /// 401 `invalid_dpop_proof` (RFC 9449 §7.1): the proof is missing, invalid, replayed or made
    /// with another key than the token's.
    case invalidDPoPProof(String)
    /// 401 `use_dpop_nonce` (RFC 9449 §9), with the nonce to put in a new proof.
    case useDPoPNonce(String)
}

/// Access tokens presented to this server's own resources (`/userinfo`, the admin API): reads
/// tokens (for `/userinfo`, with their users) and checks DPoP proofs, and writes nothing.
public struct AccessTokenValidation: Sendable {
    let tokens: any GrantStore
    let dpop: DPoPVerifier
    let context: ServerContext

    /// Resolves an `Authorization: Bearer` header (RFC 6750 §2.1) to an active access token.
    /// Tokens in the query string are ignored (OAuth 2.1 §5.1).
    public func validateBearer(_ authorization: String?, requiring scope: String) async throws -> Result<TokenRecord, BearerError>
    {
        try await validateBearer(authorization, requiringOneOf: [scope])
    }

    /// The same, for a resource that any one of `scopes` opens; `insufficient_scope` names the first.
    public func validateBearer(_ authorization: String?, requiringOneOf scopes: [String]) async throws
        -> Result<TokenRecord, BearerError>
    {
        try await validateBearer(authorization, requiringOneOf: scopes, read: readToken).map { $0.token }
    }

    /// Resolves `Authorization: DPoP` with its `DPoP` proof (RFC 9449 §7) to an active access
    /// token bound to the proof's key, or `Authorization: Bearer` as ``validateBearer(_:requiringOneOf:)``
    /// does. `method` and `path` are the request's, for the proof's `htm` and `htu`.
    public func validateAccessToken(
        authorization: String?, dpop: String?, method: String, path: String, requiringOneOf scopes: [String]
    ) async throws -> Result<TokenRecord, BearerError> {
        try await validateAccessToken(
            authorization: authorization, dpop: dpop, method: method, path: path, requiringOneOf: scopes, read: readToken
        ).map { $0.token }
    }

    /// ``validateAccessToken(authorization:dpop:method:path:requiringOneOf:)`` reading the token's
    /// user with it, in one read of the store (`/userinfo`). `user` is `nil` when the token has none
    /// or its user is gone (and then the token is not active).
    public func validateAccessTokenWithUser(
        authorization: String?, dpop: String?, method: String, path: String, requiringOneOf scopes: [String]
    ) async throws -> Result<(token: TokenRecord, user: User?), BearerError> {
        try await validateAccessToken(
            authorization: authorization, dpop: dpop, method: method, path: path, requiringOneOf: scopes
        ) { value in try await tokens.tokenWithUser(presented: value).map { (token: $0.token, extra: $0.user) } }
        .map { (token: $0.token, user: $0.extra) }
    }

    private func readToken(_ value: String) async throws -> (token: TokenRecord, extra: Void)? {
        try await tokens.token(presented: value).map { (token: $0, extra: ()) }
    }

    /// The checks, over a token that `read` finds with whatever else its read brings (`extra`).
    private func validateBearer<Extra>(
        _ authorization: String?, requiringOneOf scopes: [String],
        read: (String) async throws -> (token: TokenRecord, extra: Extra)?
    ) async throws -> Result<(token: TokenRecord, extra: Extra), BearerError> {
        guard let authorization else { return .failure(.missing) }
        guard let value = HeaderText.credentials(authorization, scheme: "Bearer").map(String.init) else {
            return .failure(.missing)
        }
        // A DPoP-bound token is no bearer token: without its proof it is refused (RFC 9449 §7.2).
        guard let found = try await read(value), found.token.kind == .access, found.token.isActive(at: context.now),
            found.token.keyThumbprint == nil
        else { return .failure(.invalidToken) }
        guard scopes.contains(where: found.token.scope.contains) else {
            return .failure(.insufficientScope(scopes.first ?? ""))
        }
        return .success(found)
    }

    private func validateAccessToken<Extra>(
        authorization: String?, dpop: String?, method: String, path: String, requiringOneOf scopes: [String],
        read: (String) async throws -> (token: TokenRecord, extra: Extra)?
    ) async throws -> Result<(token: TokenRecord, extra: Extra), BearerError> {
        guard let authorization, let value = HeaderText.credentials(authorization, scheme: "DPoP").map(String.init) else {
            return try await validateBearer(authorization, requiringOneOf: scopes, read: read)
        }
        guard let proof = dpop else { return .failure(.invalidDPoPProof("Send a DPoP proof with a DPoP-bound token.")) }
        guard let found = try await read(value), found.token.kind == .access, found.token.isActive(at: context.now),
            let bound = found.token.keyThumbprint
        else { return .failure(.invalidToken) }
        switch try await self.dpop.verify(proof, method: method, path: path, accessToken: value) {
        case .failure(let failure):
            if let nonce = failure.nonce { return .failure(.useDPoPNonce(nonce)) }
            return .failure(.invalidDPoPProof(failure.error.errorDescription ?? "The DPoP proof is not valid."))
        case .success(let thumbprint):
            guard ConstantTime.equals(thumbprint, bound) else {
                context.event(.dpopKeyMismatch, ["client_id": "\(found.token.clientID)"])
                return .failure(.invalidDPoPProof("The DPoP proof was made with another key than the token's."))
            }
        }
        guard scopes.contains(where: found.token.scope.contains) else {
            return .failure(.insufficientScope(scopes.first ?? ""))
        }
        return .success(found)
    }
}

/// `GET` or `POST /userinfo` (OpenID Connect Core §5.3): reads the token and its user, in one read.
public struct UserInfoEndpoint: Sendable {
    let accessTokens: AccessTokenValidation

    /// `GET` or `POST /userinfo` (OpenID Connect Core §5.3): the claims the token's scopes share.
    /// It needs `openid` or, as before OpenID Connect, `profile`.
    /// - Parameters:
    ///   - authorization: the `Authorization` header.
    ///   - formToken: `access_token` from a form body (RFC 6750 §2.2), when there is no header.
    ///   - dpop: the `DPoP` proof header, with `Authorization: DPoP` (RFC 9449 §7).
    ///   - method: the request's method, for the proof's `htm`.
    public func claims(authorization: String?, formToken: String? = nil, dpop: String? = nil, method: String = "GET")
        async throws -> Result<UserInfo, BearerError>
    {
        let header = formToken.map { "Bearer " + $0 } ?? authorization
        let token: TokenRecord
        let holder: User?
        switch try await accessTokens.validateAccessTokenWithUser(
            authorization: header, dpop: dpop, method: method, path: "/userinfo", requiringOneOf: ["openid", "profile"])
        {
        case .success(let valid): (token, holder) = valid
        case .failure(let error): return .failure(error)
        }
        // A token minted for a resource (RFC 8707 `aud`) is that resource's to use, not a key to the
        // user's identity: the resource server it was sent to must not read /userinfo with it
        // (docs/threat-model.md RV7). Only tokens for this server itself (no audience) are taken.
        guard token.audience.isEmpty else { return .failure(.invalidToken) }
        // An active token's user is there and enabled (the same read said so); checked again, since
        // a token without a user has no claims to give.
        guard token.userID != nil, let user = holder, user.disabledAt == nil else { return .failure(.invalidToken) }
        return .success(UserInfo(user: user, scope: token.scope))
    }
}
