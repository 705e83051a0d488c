import Foundation
import LatchkeyCore

/// Tokens as an app keeps them: the token response with its expiry turned into a date.
public struct TokenSet: Sendable, Equatable, Codable {
    public var accessToken: String
    public var tokenType: String
    public var refreshToken: String?
    /// When the access token stops working.
    public var expiresAt: Date
    /// The scopes granted, which may be fewer than were asked.
    public var scope: ScopeSet
    /// The user who signed in (`user_id`), when the server says.
    public var userID: String?
    /// `id_token`, when `openid` was granted.
    public var idToken: String?
    /// Who signed in, from the ID token once it passed every check.
    public var identity: VerifiedIdentity?

    public init(
        accessToken: String, tokenType: String = "Bearer", refreshToken: String?, expiresAt: Date, scope: ScopeSet,
        userID: String?
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.scope = scope
        self.userID = userID
    }

    /// Whether the access token expires within `margin` seconds of `now`.
    public func isExpiring(within margin: TimeInterval, at now: Date = Date()) -> Bool {
        expiresAt.timeIntervalSince(now) <= margin
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", refreshToken = "refresh_token"
        case expiresAt = "expires_at", scope, userID = "user_id", idToken = "id_token", identity
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decode(String.self, forKey: .accessToken)
        tokenType = try container.decode(String.self, forKey: .tokenType)
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        expiresAt = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .expiresAt))
        scope = ScopeSet(parsing: try container.decode(String.self, forKey: .scope)) ?? ScopeSet([])
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken)
        identity = try container.decodeIfPresent(VerifiedIdentity.self, forKey: .identity)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accessToken, forKey: .accessToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encode(expiresAt.timeIntervalSince1970, forKey: .expiresAt)
        try container.encode(scope.description, forKey: .scope)
        try container.encodeIfPresent(userID, forKey: .userID)
        try container.encodeIfPresent(idToken, forKey: .idToken)
        try container.encodeIfPresent(identity, forKey: .identity)
    }
}
