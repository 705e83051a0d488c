import Crypto
import CryptoExtras
import Foundation

/// A public signing key as a JWK (RFC 7517), the one JWK type of Latchkey: what a DPoP proof's
/// `jwk` header holds, what a key set (ours or a provider's) lists, and what the server publishes.
/// It knows the key's RFC 7638 required members, so its thumbprint and its published form come
/// from the same values.
///
/// Reading is strict: the key must be whole and of its kind (P-256 for `EC`, RSA of 2048 bits or
/// more, Ed25519 for `OKP`), and a JWK holding private members is refused rather than used.
public struct PublicJWK: Sendable {
    public enum Key: Sendable {
        case p256(P256.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
    }

    public let key: Key
    /// The required members (RFC 7638 §3.2): `crv`, `kty`, `x`, `y` for EC; `e`, `kty`, `n` for
    /// RSA; `crv`, `kty`, `x` for OKP, as base64url text.
    public let requiredMembers: [(name: String, value: String)]

    /// Why a JWK was not read: a sentence without its subject's article ("jwk lacks x."), for the
    /// caller to put after its own ("The DPoP proof's ").
    public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public init(_ key: P256.Signing.PublicKey) {
        let raw = key.rawRepresentation
        self.key = .p256(key)
        requiredMembers = [
            ("crv", "P-256"), ("kty", "EC"), ("x", Base64URL.encode(raw.prefix(32))), ("y", Base64URL.encode(raw.suffix(32))),
        ]
    }

    public init(_ key: _RSA.Signing.PublicKey) throws {
        let primitives = try key.getKeyPrimitives()
        self.key = .rsa(key)
        requiredMembers = [
            ("e", Base64URL.encode(primitives.publicExponent)), ("kty", "RSA"), ("n", Base64URL.encode(primitives.modulus)),
        ]
    }

    /// Reads a JWK object (as `JSONSerialization` gives it).
    public init(parsing jwk: [String: Any]) throws(Rejection) {
        // A private key in a public place means its holder leaked it; refuse rather than use it.
        for member in ["d", "p", "q", "dp", "dq", "qi", "k"] where jwk[member] != nil {
            throw Rejection("jwk holds private key material.")
        }
        func member(_ name: String) throws(Rejection) -> (String, Data) {
            guard let text = jwk[name] as? String, let bytes = Base64URL.decode(text) else {
                throw Rejection("jwk lacks \(name).")
            }
            return (text, bytes)
        }
        switch (jwk["kty"] as? String, jwk["crv"] as? String) {
        case ("EC", "P-256"):
            let (x, xBytes) = try member("x")
            let (y, yBytes) = try member("y")
            guard xBytes.count == 32, yBytes.count == 32,
                let key = try? P256.Signing.PublicKey(rawRepresentation: xBytes + yBytes)
            else { throw Rejection("jwk is not a P-256 public key.") }
            self.key = .p256(key)
            requiredMembers = [("crv", "P-256"), ("kty", "EC"), ("x", x), ("y", y)]
        case ("RSA", _):
            let (n, nBytes) = try member("n")
            let (e, eBytes) = try member("e")
            guard nBytes.count * 8 >= 2048, let key = try? _RSA.Signing.PublicKey(n: nBytes, e: eBytes) else {
                throw Rejection("jwk is not an RSA public key of 2048 bits or more.")
            }
            self.key = .rsa(key)
            requiredMembers = [("e", e), ("kty", "RSA"), ("n", n)]
        case ("OKP", "Ed25519"):
            let (x, xBytes) = try member("x")
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: xBytes) else {
                throw Rejection("jwk is not an Ed25519 public key.")
            }
            self.key = .ed25519(key)
            requiredMembers = [("crv", "Ed25519"), ("kty", "OKP"), ("x", x)]
        default:
            throw Rejection("jwk is not an EC P-256, RSA or Ed25519 key.")
        }
    }

    /// The JWS algorithm (RFC 7518 §3.1, RFC 8037 §3.1) this key signs with: `ES256`, `RS256`
    /// (the only RSA algorithm Latchkey accepts) or `EdDSA`.
    public var algorithm: String {
        switch key {
        case .p256: "ES256"
        case .rsa: "RS256"
        case .ed25519: "EdDSA"
        }
    }

    /// The value of a required member (`n`, `e`, `x`, `y`…), as base64url text.
    public func member(_ name: String) -> String? { requiredMembers.first { $0.name == name }?.value }

    /// The JWK SHA-256 thumbprint (RFC 7638): a DPoP-bound token's `cnf.jkt`, a signing key's `kid`.
    public var thumbprint: String { JWKThumbprint.of(requiredMembers) }

    /// The JWK as JSON, with `extra` members (`alg`, `kid`, `use`…) beside the key's, names in
    /// lexicographic order.
    public func json(adding extra: [(name: String, value: String)] = []) -> String {
        JWKThumbprint.canonicalJSON(requiredMembers + extra)
    }

    /// Whether `signature` is this key's over `signingInput` with ``algorithm`` (ES256's `r || s`
    /// of RFC 7518 §3.4, RS256's PKCS #1 v1.5, Ed25519's).
    public func isValidSignature(_ signature: Data, for signingInput: Data) -> Bool {
        isValidSignature(signature, for: signingInput, algorithm: algorithm)
    }

    /// The algorithms this key may sign with: its own ``algorithm`` and, for an RSA key, `PS256`
    /// too (RSASSA-PSS with SHA-256, RFC 7518 §3.5).
    public var algorithms: [String] { algorithm == "RS256" ? ["RS256", "PS256"] : [algorithm] }

    /// Whether `signature` is this key's over `signingInput` with `algorithm`, one of ``algorithms``.
    public func isValidSignature(_ signature: Data, for signingInput: Data, algorithm: String) -> Bool {
        switch (key, algorithm) {
        case (.p256(let key), "ES256"):
            guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: signingInput)
        case (.rsa(let key), "RS256"):
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signingInput),
                padding: .insecurePKCS1v1_5)
        case (.rsa(let key), "PS256"):
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signingInput), padding: .PSS)
        case (.ed25519(let key), "EdDSA"):
            return key.isValidSignature(signature, for: signingInput)
        default:
            return false
        }
    }
}
