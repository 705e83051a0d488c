import Crypto
import CryptoExtras
import Foundation
import JWTKit
import LatchkeyCore

/// A signing key's two halves as the keyring handles them: the private key as DER (PKCS#8 for
/// EC, PKCS#1 for RSA) and the public key as a JWK, whose RFC 7638 thumbprint is the `kid`.
struct SigningKeyMaterial {
    var algorithm: SigningAlgorithm
    var privateDER: Data
    var publicKey: PublicJWK

    /// A new key pair (RSA keys are 2048 bits).
    static func generate(_ algorithm: SigningAlgorithm) throws -> SigningKeyMaterial {
        switch algorithm {
        case .es256:
            let key = P256.Signing.PrivateKey()
            return SigningKeyMaterial(
                algorithm: algorithm, privateDER: key.derRepresentation, publicKey: PublicJWK(key.publicKey))
        case .rs256:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            return SigningKeyMaterial(
                algorithm: algorithm, privateDER: key.derRepresentation, publicKey: try PublicJWK(key.publicKey))
        }
    }

    /// `kid`: the key's JWK thumbprint (RFC 7638).
    var kid: String { publicKey.thumbprint }

    /// The public JWK as published in the key set (RFC 7517 §4: `use`, `alg`, `kid` besides the key).
    var publicJWK: String { publicKey.json(adding: [("alg", algorithm.rawValue), ("kid", kid), ("use", "sig")]) }
}

/// One private key, ready to sign compact JWSs (RFC 7515 §7.1) with it: the header is encoded once,
/// and signing is a plain swift-crypto call that any task may make at the same time as others.
public struct JWSSigner: Sendable {
    public let algorithm: SigningAlgorithm
    public let kid: String
    private let key: Key

    private enum Key: Sendable {
        case es256(P256.Signing.PrivateKey)
        case rs256(_RSA.Signing.PrivateKey)
    }

    init(algorithm: SigningAlgorithm, kid: String, privateDER: Data) throws {
        self.algorithm = algorithm
        self.kid = kid
        switch algorithm {
        case .es256: key = .es256(try P256.Signing.PrivateKey(derRepresentation: privateDER))
        case .rs256: key = .rs256(try _RSA.Signing.PrivateKey(derRepresentation: privateDER))
        }
    }

    /// `BASE64URL(header) . BASE64URL(payload) . BASE64URL(signature)` with `alg`, `kid` and `typ`
    /// in the header. ES256's signature is the raw `r || s` (RFC 7518 §3.4), RS256's PKCS #1 v1.5.
    public func sign(payloadJSON: String, type: String = "JWT") throws -> String {
        let header =
            #"{"alg":"# + JSONText.quote(algorithm.rawValue) + #","kid":"# + JSONText.quote(kid)
            + #","typ":"# + JSONText.quote(type) + "}"
        let input = Base64URL.encode(header.utf8) + "." + Base64URL.encode(payloadJSON.utf8)
        let signature: Data
        switch key {
        case .es256(let key): signature = try key.signature(for: Data(input.utf8)).rawRepresentation
        case .rs256(let key):
            signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return input + "." + Base64URL.encode(signature)
    }
}
