import Foundation
import LatchkeyCore

/// The claims `GET /userinfo` returns.
public struct UserInfo: Sendable, Equatable, Codable {
    public var sub: String
    public var userID: String
    public var username: String
    public var name: String?

    public init(sub: String, userID: String, username: String, name: String?) {
        self.sub = sub
        self.userID = userID
        self.username = username
        self.name = name
    }

    enum CodingKeys: String, CodingKey {
        case sub
        case userID = "user_id"
        case username, name
    }

    /// The claims as a JSON object, keys sorted, `name` left out when unset (what `JSONEncoder` with
    /// `.sortedKeys` writes, without its cost on this hot path).
    public var jsonBody: String {
        var body = "{"
        if let name { body += #""name":"# + JSONText.quote(name) + "," }
        body += #""sub":"# + JSONText.quote(sub)
        body += #","user_id":"# + JSONText.quote(userID)
        return body + #","username":"# + JSONText.quote(username) + "}"
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
}

extension AuthorizationServer {
    /// Resolves an `Authorization: Bearer` header (RFC 6750 §2.1) to an active access token.
    /// Tokens in the query string are ignored (OAuth 2.1 §5.1).
    public func validateBearer(_ authorization: String?, requiring scope: String) async throws -> Result<TokenRecord, BearerError>
    {
        guard let authorization else { return .failure(.missing) }
        guard let value = HeaderText.credentials(authorization, scheme: "Bearer").map(String.init) else {
            return .failure(.missing)
        }
        guard let token = try await store.token(hash: TokenHash(of: value)), token.kind == .access,
            token.isActive(at: now)
        else { return .failure(.invalidToken) }
        guard token.scope.contains(scope) else { return .failure(.insufficientScope(scope)) }
        return .success(token)
    }

    /// `GET /userinfo`: the signed-in user's id, username and display name; needs scope `profile`.
    public func userInfo(authorization: String?) async throws -> Result<UserInfo, BearerError> {
        switch try await validateBearer(authorization, requiring: "profile") {
        case .failure(let error): return .failure(error)
        case .success(let token):
            guard let userID = token.userID, let user = try await store.user(id: userID) else {
                return .failure(.invalidToken)
            }
            return .success(
                UserInfo(
                    sub: user.id.rawValue, userID: user.id.rawValue, username: user.username.rawValue, name: user.displayName))
        }
    }
}
