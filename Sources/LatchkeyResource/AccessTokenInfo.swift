import Foundation
import JWTKit

/// What a validated access token says: who, which app, what it may do, for how long.
public struct AccessTokenInfo: Sendable, Equatable {
    /// `sub`: the user, or for a client-credentials token the client.
    public var subject: String?
    /// `client_id`: the app the token was issued to.
    public var clientID: String?
    /// `scope`, split at spaces.
    public var scopes: Set<String>
    /// `aud`: the resources the token is for (this one among them).
    public var audience: [String]
    /// `exp`.
    public var expiresAt: Date?
    /// `cnf.jkt` (RFC 9449 §6): the DPoP key the token is bound to; `nil` for a bearer token.
    public var keyThumbprint: String?
    /// `acr` (RFC 9068 §2.2.1, RFC 9470 §6): the authentication context class the user's sign-in
    /// reached, such as Latchkey's `urn:latchkey:acr:2` (two factors); `nil` when the token does
    /// not say (a client's own token does not).
    public var acr: String?
    /// `auth_time` (RFC 9068 §2.2.1, RFC 9470 §6): when the user signed in; `nil` when the token
    /// does not say.
    public var authTime: Date?

    public init(
        subject: String?, clientID: String?, scopes: Set<String>, audience: [String], expiresAt: Date?,
        keyThumbprint: String? = nil, acr: String? = nil, authTime: Date? = nil
    ) {
        self.keyThumbprint = keyThumbprint
        self.acr = acr
        self.authTime = authTime
        self.subject = subject
        self.clientID = clientID
        self.scopes = scopes
        self.audience = audience
        self.expiresAt = expiresAt
    }
}

/// The claims of a JWT access token (RFC 9068 §2.2). `aud` may be a string or an array. The
/// checks are the validator's, so `verify(using:)` checks nothing.
struct JWTAccessTokenPayload: JWTPayload {
    var iss: String
    var sub: String?
    var aud: [String]
    var exp: Double
    var iat: Double?
    var clientID: String?
    var scope: String?
    var cnf: Confirmation?
    /// `acr` and `auth_time` (RFC 9068 §2.2.1): how and when the user signed in.
    var acr: String?
    var authTime: Double?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, scope, cnf, acr
        case clientID = "client_id"
        case authTime = "auth_time"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decodeIfPresent(String.self, forKey: .sub)
        if let single = try? container.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try container.decode([String].self, forKey: .aud)
        }
        exp = try container.decode(Double.self, forKey: .exp)
        iat = try container.decodeIfPresent(Double.self, forKey: .iat)
        clientID = try container.decodeIfPresent(String.self, forKey: .clientID)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
        cnf = try container.decodeIfPresent(Confirmation.self, forKey: .cnf)
        acr = try container.decodeIfPresent(String.self, forKey: .acr)
        authTime = try container.decodeIfPresent(Double.self, forKey: .authTime)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// `cnf` (RFC 7800): with DPoP, the thumbprint of the key the token is bound to (RFC 9449 §6).
/// Any other confirmation method (a certificate's `x5t#S256`, say) is one this library cannot
/// check, so a token bound that way is refused rather than taken as a bearer token.
struct Confirmation: Codable, Sendable {
    var jkt: String?
    var hasUnknownMethod: Bool

    struct Member: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Member.self)
        jkt = try container.decodeIfPresent(String.self, forKey: Member(stringValue: "jkt"))
        hasUnknownMethod = container.allKeys.contains { $0.stringValue != "jkt" }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Member.self)
        try container.encodeIfPresent(jkt, forKey: Member(stringValue: "jkt"))
    }
}

/// An RFC 7662 §2.2 introspection answer, as far as a resource server needs it.
struct IntrospectionAnswer: Decodable {
    var active: Bool
    /// `token_type`: `Bearer` or `DPoP` for an access token (RFC 6749 §7.1); a refresh token has
    /// none, and is never accepted (docs/threat-model.md RV5).
    var tokenType: String?
    var scope: String?
    var clientID: String?
    var sub: String?
    var exp: Double?
    var aud: [String]
    var cnf: Confirmation?
    /// `acr` and `auth_time` (RFC 9470 §6.2): how and when the user signed in.
    var acr: String?
    var authTime: Double?

    enum CodingKeys: String, CodingKey {
        case active, scope, sub, exp, aud, cnf, acr
        case clientID = "client_id"
        case tokenType = "token_type"
        case authTime = "auth_time"
    }

    /// Whether the answer names an access token type this library knows.
    var isAccessToken: Bool {
        guard let tokenType else { return false }
        return ["bearer", "dpop"].contains(tokenType.lowercased())
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        active = try container.decode(Bool.self, forKey: .active)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
        clientID = try container.decodeIfPresent(String.self, forKey: .clientID)
        sub = try container.decodeIfPresent(String.self, forKey: .sub)
        exp = try container.decodeIfPresent(Double.self, forKey: .exp)
        if let single = try? container.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try container.decodeIfPresent([String].self, forKey: .aud) ?? []
        }
        cnf = try container.decodeIfPresent(Confirmation.self, forKey: .cnf)
        acr = try container.decodeIfPresent(String.self, forKey: .acr)
        authTime = try container.decodeIfPresent(Double.self, forKey: .authTime)
    }
}
