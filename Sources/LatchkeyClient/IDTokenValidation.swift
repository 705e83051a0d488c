import Foundation
import JWTKit
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Who signed in, from an ID token whose signature and claims were checked (OpenID Connect Core §3.1.3.7).
public struct VerifiedIdentity: Sendable, Equatable, Codable {
    /// `iss`.
    public var issuer: String
    /// `sub`: the user's stable identifier at the provider.
    public var subject: String
    /// `auth_time`: when the user signed in, if the provider says.
    public var authTime: Date?
    /// `name`, `preferred_username`, `email`, when the provider puts them in the ID token.
    public var name: String?
    public var preferredUsername: String?
    public var email: String?
    /// `email_verified`: whether the provider says it checked that ``email`` is the user's; `nil`
    /// when it does not say.
    public var emailVerified: Bool?
}

/// An ID token's claims as received: lenient about what may be a string or an array (`aud`).
struct ReceivedIDToken: JWTPayload {
    var iss: String
    var sub: String
    var aud: [String]
    var azp: String?
    var exp: Double
    var iat: Double
    var authTime: Double?
    var nonce: String?
    var atHash: String?
    var name: String?
    var preferredUsername: String?
    var email: String?
    var emailVerified: Bool?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, azp, exp, iat, nonce, name, email
        case authTime = "auth_time", atHash = "at_hash", preferredUsername = "preferred_username"
        case emailVerified = "email_verified"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decode(String.self, forKey: .sub)
        if let one = try? container.decode(String.self, forKey: .aud) {
            aud = [one]
        } else {
            aud = try container.decode([String].self, forKey: .aud)
        }
        azp = try container.decodeIfPresent(String.self, forKey: .azp)
        exp = try container.decode(Double.self, forKey: .exp)
        iat = try container.decode(Double.self, forKey: .iat)
        authTime = try container.decodeIfPresent(Double.self, forKey: .authTime)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        atHash = try container.decodeIfPresent(String.self, forKey: .atHash)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        preferredUsername = try container.decodeIfPresent(String.self, forKey: .preferredUsername)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        // A boolean, though some providers send the text "true".
        emailVerified =
            (try? container.decodeIfPresent(Bool.self, forKey: .emailVerified))
            ?? (try? container.decodeIfPresent(String.self, forKey: .emailVerified)).map { $0 == "true" }
    }

    /// The claims are checked by ``IDTokenValidator``, which knows what to expect.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Checks ID tokens for one client of one provider, with the provider's key set fetched once and
/// fetched again (once per token) when a token names a `kid` the cached set lacks: that is how a
/// provider's key rotation is meant to be seen.
final class IDTokenValidator: Sendable {
    let provider: ProviderConfiguration
    let clientID: String
    let session: URLSession
    /// Allowed difference between the provider's clock and this device's.
    static let clockSkew: TimeInterval = 120
    private let cache = KeySetCache()

    init(provider: ProviderConfiguration, clientID: String, session: URLSession) {
        self.provider = provider
        self.clientID = clientID
        self.session = session
    }

    /// Validates `token` (OpenID Connect Core §3.1.3.7, §12.2).
    /// - Parameters:
    ///   - nonce: the nonce the authorization request sent; `nil` after a refresh (none expected).
    ///   - accessToken: checked against `at_hash` when the token carries one.
    ///   - previous: on a refresh, the identity from the first ID token: `sub` must not change.
    /// - Throws: ``ClientError/invalidIDToken(_:)``.
    func validate(_ token: String, nonce: String?, accessToken: String, previous: VerifiedIdentity? = nil, now: Date = Date())
        async throws -> VerifiedIdentity
    {
        guard let issuer = provider.issuer, let jwksURI = provider.jwksURI else {
            throw ClientError.invalidIDToken("the provider publishes no issuer or jwks_uri to check it with")
        }
        let allowed = Set((provider.idTokenSigningAlgorithms ?? ["RS256"]).filter { $0 == "RS256" || $0 == "ES256" })
        var keys = try await cache.keys(from: jwksURI, session: session, refresh: false)
        var result = await keys.verify(token, as: ReceivedIDToken.self, allowed: allowed)
        if case .failure(.unknownKey) = result {
            keys = try await cache.keys(from: jwksURI, session: session, refresh: true)
            result = await keys.verify(token, as: ReceivedIDToken.self, allowed: allowed)
        }
        let claims: ReceivedIDToken
        switch result {
        case .success(let value): claims = value
        case .failure(.unknownKey(let kid)):
            throw ClientError.invalidIDToken("it names a key the provider does not publish (\(kid ?? "no kid"))")
        case .failure(.algorithmNotAllowed(let alg)):
            throw ClientError.invalidIDToken("it is signed with \(alg), which is not allowed")
        case .failure: throw ClientError.invalidIDToken("its signature does not verify")
        }
        guard claims.iss == issuer else { throw ClientError.invalidIDToken("it was issued by \(claims.iss), not \(issuer)") }
        guard claims.aud.contains(clientID) else { throw ClientError.invalidIDToken("it was issued to another client") }
        if claims.aud.count > 1 || claims.azp != nil, claims.azp != clientID {
            throw ClientError.invalidIDToken("its azp is not this client")
        }
        let seconds = now.timeIntervalSince1970
        guard claims.exp + Self.clockSkew > seconds else { throw ClientError.invalidIDToken("it has expired") }
        guard claims.iat - Self.clockSkew <= seconds else { throw ClientError.invalidIDToken("it was issued in the future") }
        if let nonce {
            guard let returned = claims.nonce, ConstantTime.equals(returned, nonce) else {
                throw ClientError.invalidIDToken("its nonce is not the one this sign-in sent")
            }
        }
        if let atHash = claims.atHash {
            guard ConstantTime.equals(atHash, leftHalfSHA256(of: accessToken)) else {
                throw ClientError.invalidIDToken("its at_hash does not match the access token")
            }
        }
        if let previous, previous.subject != claims.sub || previous.issuer != claims.iss {
            throw ClientError.invalidIDToken("a refresh returned another user's ID token")
        }
        return VerifiedIdentity(
            issuer: claims.iss, subject: claims.sub, authTime: claims.authTime.map(Date.init(timeIntervalSince1970:)),
            name: claims.name, preferredUsername: claims.preferredUsername, email: claims.email,
            emailVerified: claims.emailVerified)
    }
}

/// The provider's key set, fetched when first needed and again on request.
private actor KeySetCache {
    private var keys: PublicKeySet?

    func keys(from url: URL, session: URLSession, refresh: Bool) async throws -> PublicKeySet {
        if let keys, !refresh { return keys }
        let data: Data
        let response: URLResponse
        do { (data, response) = try await session.data(from: url) } catch {
            throw ClientError.network(error.localizedDescription)
        }
        guard (response as? HTTPURLResponse)?.statusCode == 200, let parsed = try? await PublicKeySet.parse(data) else {
            throw ClientError.invalidResponse("\(url) did not answer a JWK set")
        }
        keys = parsed
        return parsed
    }
}
