import Crypto
import Foundation
import JWTKit

/// The members of a JWS header (RFC 7515 §4.1) that choose the key, read without trusting them.
public struct JWSHeader: Sendable, Equatable {
    public var alg: String
    public var kid: String?
    public var typ: String?

    /// Reads the header of a compact JWS; `nil` when it is not three base64url parts with a JSON header.
    public init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(parts[0]),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let alg = object["alg"] as? String
        else { return nil }
        self.alg = alg
        kid = object["kid"] as? String
        typ = object["typ"] as? String
    }
}

/// Why a JWS was not accepted.
public enum JWSRejection: Error, Sendable, Equatable {
    /// Not a compact JWS with a readable header.
    case malformed
    /// No key in the set has this `kid` (or the header names none while the set has several keys).
    case unknownKey(String?)
    /// The header's `alg` is not the key's own, or not one the caller accepts (`none`, `HS256`…).
    case algorithmNotAllowed(String)
    /// The signature does not verify, or the payload is not the expected JSON.
    case badSignature
}

/// A JWK Set (RFC 7517 §5) of public signing keys, for verifying what their holder signed: RS256
/// keys (`kty` RSA) and ES256 keys (`kty` EC, `crv` P-256); other keys are skipped.
///
/// Verification is strict whatever the token says: the header's `kid` must name a key of the set,
/// and its `alg` must be that key's own algorithm and one the caller allows, so `alg: none` and a
/// token MACed with a public key as the HMAC secret (`HS256`) are refused before any checking.
public struct PublicKeySet: Sendable {
    /// The algorithm of each key, by `kid`.
    public let algorithms: [String: String]
    private let keys: JWTKeyCollection

    /// Reads a key set, each key through ``PublicJWK``; keys that are not RS256 or ES256 (RSA of
    /// 2048 bits or more, P-256), that hold private members, or whose `alg` is not their own are skipped.
    public static func parse(_ json: Data) async throws -> PublicKeySet {
        guard let document = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
            let list = document["keys"] as? [[String: Any]]
        else { throw JWSRejection.malformed }
        let keys = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        for (index, object) in list.enumerated() {
            if let use = object["use"] as? String, use != "sig" { continue }
            guard let jwk = try? PublicJWK(parsing: object) else { continue }
            if let declared = object["alg"] as? String, declared != jwk.algorithm { continue }
            // A key without a kid is known by its position: no header can name it, but a token
            // without a kid is checked against a set of one key.
            let kid = object["kid"] as? String ?? "#\(index)"
            let identifier = JWKIdentifier(string: kid)
            switch jwk.key {
            case .rsa:
                guard let n = jwk.member("n"), let e = jwk.member("e"),
                    let key = try? Insecure.RSA.PublicKey(modulus: n, exponent: e)
                else { continue }
                await keys.add(rsa: key, digestAlgorithm: .sha256, kid: identifier)
            case .p256:
                guard let x = jwk.member("x"), let y = jwk.member("y"), let key = try? ES256PublicKey(parameters: (x: x, y: y))
                else { continue }
                await keys.add(ecdsa: key, kid: identifier)
            case .ed25519:
                continue
            }
            algorithms[kid] = jwk.algorithm
        }
        return PublicKeySet(algorithms: algorithms, keys: keys)
    }

    /// Verifies `token`'s signature and decodes its payload; claims are the caller's to check.
    /// - Parameter allowed: the algorithms the caller accepts (for example the provider's
    ///   `id_token_signing_alg_values_supported`, never `none`).
    public func verify<Payload: JWTPayload>(_ token: String, as _: Payload.Type, allowed: Set<String>) async
        -> Result<Payload, JWSRejection>
    {
        guard let header = JWSHeader(token) else { return .failure(.malformed) }
        let kid = header.kid ?? (algorithms.count == 1 ? algorithms.keys.first : nil)
        guard let kid, let algorithm = algorithms[kid] else { return .failure(.unknownKey(header.kid)) }
        guard header.alg == algorithm, allowed.contains(algorithm) else { return .failure(.algorithmNotAllowed(header.alg)) }
        // JWTKit picks the key by the header's kid, or its only key when there is none.
        guard let payload = try? await keys.verify(token, as: Payload.self) else { return .failure(.badSignature) }
        return .success(payload)
    }
}

/// `at_hash` (OpenID Connect Core §3.1.3.6): base64url of the left half of the SHA-256 of the
/// token's ASCII value (SHA-256 being the hash of RS256 and ES256 alike).
public func leftHalfSHA256(of value: String) -> String {
    Base64URL.encode(SHA256.hash(data: Data(value.utf8)).prefix(16))
}
