import Crypto
import Foundation

/// A DPoP proof (RFC 9449 §4) that passed every check of §4.3 that needs no state: what the
/// caller still has to check is that ``jti`` was not seen before and, when it sent one, the
/// ``nonce``.
public struct DPoPProof: Sendable, Equatable {
    /// The JWK SHA-256 thumbprint (RFC 7638) of the proof's public key: `cnf.jkt` of the tokens
    /// bound to it.
    public var keyThumbprint: String
    /// `jti`: unique per proof.
    public var jti: String
    /// `iat`.
    public var issuedAt: Date
    /// `nonce`, when the proof carries one.
    public var nonce: String?

    /// The signing algorithms accepted (`dpop_signing_alg_values_supported`).
    public static let algorithms = ["ES256", "RS256", "EdDSA"]

    /// Why a proof was refused: a sentence for `error_description`.
    public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Checks `proof` for a request.
    /// - Parameters:
    ///   - method: the request's method (`htm`).
    ///   - url: the request's URL as the server is reached from outside (`htu`, compared
    ///     without query and fragment, scheme and host in lowercase, default port left out).
    ///   - accessToken: at a resource, the access token sent with it: `ath` must be its hash (§4.2).
    ///   - lifetime: how long after its `iat` a proof is accepted; `leeway`: how far ahead of the
    ///     server's clock its `iat` may be.
    public init(
        verifying proof: String, method: String, url: String, accessToken: String? = nil, now: Date,
        lifetime: TimeInterval = 120, leeway: TimeInterval = 60
    ) throws(Rejection) {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, proof.utf8.count <= 8192,
            let headerData = Base64URL.decode(parts[0]), let payloadData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else { throw Rejection("The DPoP proof is not a JWS in compact form.") }
        guard header["typ"] as? String == "dpop+jwt" else { throw Rejection("The DPoP proof's typ must be dpop+jwt.") }
        guard let alg = header["alg"] as? String, Self.algorithms.contains(alg) else {
            throw Rejection("The DPoP proof's alg must be one of \(Self.algorithms.joined(separator: ", ")).")
        }
        guard let jwk = header["jwk"] as? [String: Any] else { throw Rejection("The DPoP proof has no jwk header.") }
        let key: PublicJWK
        do { key = try PublicJWK(parsing: jwk) } catch { throw Rejection("The DPoP proof's \(error)") }
        guard key.algorithm == alg else { throw Rejection("The DPoP proof's jwk does not fit its alg \(alg).") }
        guard key.isValidSignature(signature, for: Data(proof.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)))
        else { throw Rejection("The DPoP proof's signature does not verify with its jwk.") }

        guard let jti = claims["jti"] as? String, !jti.isEmpty, jti.utf8.count <= 256 else {
            throw Rejection("The DPoP proof needs a jti of 1 to 256 characters.")
        }
        guard claims["htm"] as? String == method else { throw Rejection("The DPoP proof's htm is not \(method).") }
        guard let htu = claims["htu"] as? String, let expected = Self.normalized(url), Self.normalized(htu) == expected
        else { throw Rejection("The DPoP proof's htu is not \(Self.normalized(url) ?? url).") }
        guard let iat = (claims["iat"] as? NSNumber)?.doubleValue, iat.isFinite else {
            throw Rejection("The DPoP proof has no iat.")
        }
        let issuedAt = Date(timeIntervalSince1970: iat)
        guard issuedAt <= now.addingTimeInterval(leeway), issuedAt >= now.addingTimeInterval(-lifetime) else {
            throw Rejection("The DPoP proof's iat is too far from the server's time; make a new proof.")
        }
        if let accessToken {
            let hash = Base64URL.encode(SHA256.hash(data: Data(accessToken.utf8)))
            guard let ath = claims["ath"] as? String, ConstantTime.equals(ath, hash) else {
                throw Rejection("The DPoP proof's ath is not the hash of the access token sent with it.")
            }
        }
        let nonce = claims["nonce"]
        guard nonce == nil || nonce is String else { throw Rejection("The DPoP proof's nonce must be a string.") }
        self.keyThumbprint = key.thumbprint
        self.jti = jti
        self.issuedAt = issuedAt
        self.nonce = nonce as? String
    }

    /// `url` without query and fragment, scheme and host in lowercase, without a default port;
    /// `nil` when it is not an absolute http(s) URL.
    static func normalized(_ url: String) -> String? {
        guard var components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else { return nil }
        components.scheme = scheme
        components.host = host.lowercased()
        if (scheme == "https" && components.port == 443) || (scheme == "http" && components.port == 80) {
            components.port = nil
        }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        if components.path.isEmpty { components.path = "/" }
        return components.string
    }
}

extension DPoPProof {
    /// Makes a proof (RFC 9449 §4.2) signed ES256 with `key`, its public half in the `jwk` header.
    /// - Parameters:
    ///   - url: the request's URL; query and fragment are left out of `htu`.
    ///   - accessToken: with a request to a resource, the token it carries (`ath`).
    ///   - nonce: the server's latest `DPoP-Nonce`, if it asked for one.
    public static func make(
        key: P256.Signing.PrivateKey, method: String, url: String, accessToken: String? = nil, nonce: String? = nil,
        issuedAt: Date = Date(), jti: String = RandomToken.randomBase64URL(byteCount: 16)
    ) throws -> String {
        let header = #"{"typ":"dpop+jwt","alg":"ES256","jwk":"# + publicJWK(of: key.publicKey) + "}"
        var claims = #"{"jti":"# + JSONText.quote(jti) + #","htm":"# + JSONText.quote(method)
        claims += #","htu":"# + JSONText.quote(normalized(url) ?? url) + #","iat":"# + String(Int(issuedAt.timeIntervalSince1970))
        if let accessToken { claims += #","ath":"# + JSONText.quote(Base64URL.encode(SHA256.hash(data: Data(accessToken.utf8)))) }
        if let nonce { claims += #","nonce":"# + JSONText.quote(nonce) }
        claims += "}"
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The public JWK of a P-256 key: `{"crv":"P-256","kty":"EC","x":…,"y":…}`.
    public static func publicJWK(of key: P256.Signing.PublicKey) -> String { PublicJWK(key).json() }

    /// The JWK SHA-256 thumbprint (RFC 7638) of a P-256 key: what `cnf.jkt` holds for tokens bound to it.
    public static func thumbprint(of key: P256.Signing.PublicKey) -> String { PublicJWK(key).thumbprint }
}
