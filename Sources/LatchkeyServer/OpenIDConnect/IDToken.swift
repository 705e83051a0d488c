import Foundation
import JWTKit
import LatchkeyCore

/// The claims of an ID token (OpenID Connect Core §2) that Latchkey issues and checks.
public struct IDTokenClaims: JWTPayload, Equatable {
    /// `iss`: the issuer identifier.
    public var iss: String
    /// `sub`: the user's stable id (the same `user_id` the token response carries).
    public var sub: String
    /// `aud`: the client id.
    public var aud: String
    /// `exp`, `iat`, `auth_time`: seconds since 1970.
    public var exp: Int
    public var iat: Int
    public var authTime: Int?
    /// `nonce`: echoed from the authorization request when it had one.
    public var nonce: String?
    /// `at_hash` (§3.1.3.6): the left half of the access token's SHA-256, base64url.
    public var atHash: String?
    /// `amr` (RFC 8176): how the user signed in; `pwd` for a password, `pwd otp mfa` with a
    /// one-time code after it.
    public var amr: [String]?
    /// `acr` (OpenID Connect Core §2): the level those methods reach (``AuthenticationLevel``).
    public var acr: String?
    /// `idp`: the upstream identity provider a federated sign-in went through, by its name here
    /// (the claim Microsoft's identity platform uses; `amr` then holds `fed`).
    public var idp: String?
    /// `sid` (OpenID Connect Back-Channel Logout 1.0 §2.1): the browser session the sign-in was
    /// made in (``BrowserSession/sid``), which a logout token names when that session ends.
    public var sid: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nonce, amr, acr, idp, sid
        case authTime = "auth_time"
        case atHash = "at_hash"
    }

    /// Claims are checked by whoever verifies (``SigningKeyring/verify(_:as:at:)`` checks only the signature).
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    public init(
        iss: String, sub: String, aud: String, exp: Int, iat: Int, authTime: Int?, nonce: String?, atHash: String?,
        amr: [String]?, acr: String? = nil, idp: String? = nil, sid: String? = nil
    ) {
        self.sid = sid
        self.acr = acr
        self.idp = idp
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.exp = exp
        self.iat = iat
        self.authTime = authTime
        self.nonce = nonce
        self.atHash = atHash
        self.amr = amr
    }

    /// `aud` may be one string or an array (RFC 7519 §4.1.3); another server's hint may use either.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decode(String.self, forKey: .sub)
        if let single = try? container.decode(String.self, forKey: .aud) {
            aud = single
        } else {
            let many = try container.decode([String].self, forKey: .aud)
            guard many.count == 1 else {
                throw DecodingError.dataCorruptedError(forKey: .aud, in: container, debugDescription: "several audiences")
            }
            aud = many[0]
        }
        exp = try container.decode(Int.self, forKey: .exp)
        iat = try container.decode(Int.self, forKey: .iat)
        authTime = try container.decodeIfPresent(Int.self, forKey: .authTime)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        atHash = try container.decodeIfPresent(String.self, forKey: .atHash)
        amr = try container.decodeIfPresent([String].self, forKey: .amr)
        acr = try container.decodeIfPresent(String.self, forKey: .acr)
        idp = try container.decodeIfPresent(String.self, forKey: .idp)
        sid = try container.decodeIfPresent(String.self, forKey: .sid)
    }

    /// The claims as a JSON object, written directly (the code exchange is a hot path).
    public var jsonBody: String {
        var body = #"{"iss":"# + JSONText.quote(iss) + #","sub":"# + JSONText.quote(sub) + #","aud":"# + JSONText.quote(aud)
        body += #","exp":"# + String(exp) + #","iat":"# + String(iat)
        if let authTime { body += #","auth_time":"# + String(authTime) }
        if let nonce { body += #","nonce":"# + JSONText.quote(nonce) }
        if let atHash { body += #","at_hash":"# + JSONText.quote(atHash) }
        if let amr { body += #","amr":["# + amr.map(JSONText.quote).joined(separator: ",") + "]" }
        if let acr { body += #","acr":"# + JSONText.quote(acr) }
        if let idp { body += #","idp":"# + JSONText.quote(idp) }
        if let sid { body += #","sid":"# + JSONText.quote(sid) }
        return body + "}"
    }

    /// `at_hash` / `c_hash` (§3.1.3.6): base64url of the left half of the SHA-256 of the ASCII
    /// value (SHA-256 being the hash of RS256 and ES256 alike).
    public static func halfHash(of value: String) -> String { leftHalfSHA256(of: value) }
}

extension TokenIssuance {
    /// An ID token for `userID` at `client`, signed with the client's algorithm
    /// (`id_token_signed_response_alg`). `authTime` is when the user signed in; on a refresh it is
    /// the original sign-in (OpenID Connect Core §12.2), and `nonce` is left out; so are `amr`
    /// and its `acr`, the methods of that sign-in (a password alone when not recorded).
    func idToken(
        client: Client, userID: UserID, authTime: Date?, amr: AuthenticationMethods?, nonce: String?, accessToken: String,
        sid: String? = nil
    ) async throws -> String {
        let amr = amr ?? .password
        let issuedAt = Int(now.timeIntervalSince1970)
        let claims = IDTokenClaims(
            iss: issuer, sub: userID.rawValue, aud: client.id.rawValue,
            exp: issuedAt + Int(configuration.idTokenLifetime), iat: issuedAt,
            authTime: authTime.map { Int($0.timeIntervalSince1970) }, nonce: nonce,
            atHash: IDTokenClaims.halfHash(of: accessToken), amr: amr.values, acr: amr.level.rawValue,
            idp: amr.identityProvider, sid: sid)
        return try await signingKeys.signer(for: client.idTokenSigningAlgorithm, at: now).sign(payloadJSON: claims.jsonBody)
    }
}

extension JWSHeader {
    /// Whether the header is that of an ID token as this server signs them (`typ` `JWT`, or none):
    /// never another type the same keys sign, a JWT access token (`at+jwt`) or a logout token
    /// (`logout+jwt`).
    var isIDTokenType: Bool { typ.map { $0.lowercased() == "jwt" } ?? true }
}
