import Crypto
import CryptoExtras
import Foundation
import LatchkeyCore

/// A credential public key in COSE form (RFC 9052 §7, RFC 9053), as an authenticator hands it
/// over at registration: ES256 (P-256), EdDSA (Ed25519) or RS256 (RSA of 2,048 bits or more).
struct COSEKey: Sendable, Equatable {
    /// The COSE algorithm (`alg`, label 3): -7 ES256, -8 EdDSA, -257 RS256.
    enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case edDSA = -8
        case rs256 = -257
    }

    let algorithm: Algorithm
    /// The key in the form its verifier takes: an X9.63 point, 32 raw bytes, or `n` and `e`.
    let material: [[UInt8]]

    /// Reads a COSE key map, refusing a type, curve or algorithm that do not go together, and
    /// coordinates of the wrong length.
    init(_ item: CBOR) throws {
        func bytes(_ label: Int) throws -> [UInt8] {
            guard case .bytes(let value)? = item[label] else { throw CBORError(description: "COSE key label \(label)") }
            return value
        }
        guard case .map = item, let type = item[1]?.int, let alg = item[3]?.int.flatMap(Algorithm.init(rawValue:)) else {
            throw CBORError(description: "a COSE key without a supported kty and alg")
        }
        switch (type, alg) {
        case (2, .es256):
            let (x, y) = (try bytes(-2), try bytes(-3))
            guard item[-1]?.int == 1, x.count == 32, y.count == 32 else {
                throw CBORError(description: "an ES256 key not on P-256")
            }
            _ = try P256.Signing.PublicKey(x963Representation: [0x04] + x + y)
            material = [[0x04] + x + y]
        case (1, .edDSA):
            let x = try bytes(-2)
            guard item[-1]?.int == 6, x.count == 32 else { throw CBORError(description: "an EdDSA key not on Ed25519") }
            _ = try Curve25519.Signing.PublicKey(rawRepresentation: x)
            material = [x]
        case (3, .rs256):
            let (n, e) = (try bytes(-1), try bytes(-2))
            _ = try _RSA.Signing.PublicKey(n: n, e: e)
            material = [n, e]
        default:
            throw CBORError(description: "a COSE key whose kty does not go with its alg")
        }
        algorithm = alg
    }

    init(algorithm: Algorithm, material: [[UInt8]]) {
        self.algorithm = algorithm
        self.material = material
    }

    /// Whether `signature` is this key's signature of `data` (WebAuthn §6.3.3: ECDSA in DER,
    /// Ed25519 raw, RSASSA-PKCS1-v1_5 with SHA-256).
    func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch algorithm {
        case .es256:
            guard let key = try? P256.Signing.PublicKey(x963Representation: material[0]),
                let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature)
            else { return false }
            return key.isValidSignature(signature, for: data)
        case .edDSA:
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: material[0]) else { return false }
            return key.isValidSignature(signature, for: data)
        case .rs256:
            guard let key = try? _RSA.Signing.PublicKey(n: material[0], e: material[1]) else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: data, padding: .insecurePKCS1v1_5)
        }
    }

    /// The key as the store keeps it: the algorithm and each part in base64url, `.`-separated.
    var storeValue: String {
        ([String(algorithm.rawValue)] + material.map { Base64URL.encode($0) }).joined(separator: ".")
    }

    init?(storeValue: String) {
        let parts = storeValue.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, let algorithm = Int(first).flatMap(Algorithm.init(rawValue:)) else { return nil }
        var material: [[UInt8]] = []
        for part in parts.dropFirst() {
            guard let bytes = Base64URL.decode(part) else { return nil }
            material.append(Array(bytes))
        }
        guard material.count == (algorithm == .rs256 ? 2 : 1) else { return nil }
        self.init(algorithm: algorithm, material: material)
    }
}
