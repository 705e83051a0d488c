import Crypto
import Foundation

/// JWK thumbprints (RFC 7638): what a DPoP-bound token's `cnf.jkt` holds and what a signing key's
/// `kid` is. The one place Latchkey computes them, for ``PublicJWK/thumbprint``.
public enum JWKThumbprint {
    /// The thumbprint of the public key whose required members (RFC 7638 §3.2: `crv`, `kty`, `x`,
    /// `y` for EC; `e`, `kty`, `n` for RSA; `crv`, `kty`, `x` for OKP) are `requiredMembers`:
    /// SHA-256 of them as a JSON object in lexicographic order without whitespace (§3.1),
    /// base64url without padding.
    public static func of(_ requiredMembers: [(name: String, value: String)]) -> String {
        Base64URL.encode(SHA256.hash(data: Data(canonicalJSON(requiredMembers).utf8)))
    }

    /// `members` as a JSON object, names in lexicographic order, without whitespace.
    public static func canonicalJSON(_ members: [(name: String, value: String)]) -> String {
        "{"
            + members.sorted { $0.name < $1.name }.map { JSONText.quote($0.name) + ":" + JSONText.quote($0.value) }
            .joined(separator: ",") + "}"
    }
}
