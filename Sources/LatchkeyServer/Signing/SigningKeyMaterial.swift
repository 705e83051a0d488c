import Crypto
import CryptoExtras
import Foundation
import JWTKit
import LatchkeyCore

/// A signing key's two halves as the keyring handles them: the private key as DER (PKCS#8 for
/// EC, PKCS#1 for RSA) and the public key's JWK members, with the RFC 7638 thumbprint as `kid`.
struct SigningKeyMaterial {
    var algorithm: SigningAlgorithm
    var privateDER: Data
    /// The JWK's required members (RFC 7638 §3.2), which the thumbprint covers.
    var requiredMembers: [(String, String)]

    /// A new key pair (RSA keys are 2048 bits).
    static func generate(_ algorithm: SigningAlgorithm) throws -> SigningKeyMaterial {
        switch algorithm {
        case .es256:
            let key = P256.Signing.PrivateKey()
            let raw = key.publicKey.rawRepresentation
            return SigningKeyMaterial(
                algorithm: algorithm, privateDER: key.derRepresentation,
                requiredMembers: [
                    ("crv", "P-256"), ("kty", "EC"), ("x", Base64URL.encode(raw.prefix(32))),
                    ("y", Base64URL.encode(raw.suffix(32))),
                ])
        case .rs256:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let primitives = try key.publicKey.getKeyPrimitives()
            return SigningKeyMaterial(
                algorithm: algorithm, privateDER: key.derRepresentation,
                requiredMembers: [
                    ("e", Base64URL.encode(primitives.publicExponent)), ("kty", "RSA"),
                    ("n", Base64URL.encode(primitives.modulus)),
                ])
        }
    }

    /// `kid`: the JWK thumbprint (RFC 7638 §3): SHA-256 of the required members in order, no spaces.
    var kid: String {
        let canonical = "{" + requiredMembers.map { "\"\($0.0)\":\"\($0.1)\"" }.joined(separator: ",") + "}"
        return Base64URL.encode(SHA256.hash(data: Data(canonical.utf8)))
    }

    /// The public JWK as published in the key set (RFC 7517 §4: `use`, `alg`, `kid` besides the key).
    var publicJWK: String {
        let members = requiredMembers + [("alg", algorithm.rawValue), ("kid", kid), ("use", "sig")]
        return "{"
            + members.sorted { $0.0 < $1.0 }.map { JSONText.quote($0.0) + ":" + JSONText.quote($0.1) }
            .joined(separator: ",") + "}"
    }

    /// Adds the private key to `keys` as the signer for `kid`.
    static func addSigner(
        algorithm: SigningAlgorithm, privateDER: Data, kid: String, to keys: JWTKeyCollection
    ) async throws {
        let identifier = JWKIdentifier(string: kid)
        switch algorithm {
        case .es256:
            await keys.add(
                ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(derRepresentation: privateDER)), kid: identifier)
        case .rs256:
            await keys.add(
                rsa: try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(derRepresentation: privateDER)),
                digestAlgorithm: .sha256, kid: identifier)
        }
    }
}
