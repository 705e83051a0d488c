import Crypto
import Foundation

/// The PKCE code verifier (`code_verifier`, RFC 7636 §4.1): 43 to 128 characters from the
/// unreserved set `A-Z a-z 0-9 - . _ ~`.
public struct CodeVerifier: Sendable, Hashable, CustomStringConvertible {
    /// The verifier as sent on the wire.
    public let value: String

    /// Checks `value` against the RFC 7636 §4.1 ABNF (`43*128unreserved`).
    /// - Returns: `nil` when the value is too short, too long or holds any other character.
    public init?(_ value: String) {
        guard Self.isWellFormed(value) else { return nil }
        self.value = value
    }

    /// A fresh verifier of `length` characters drawn from the unreserved set with the system CSPRNG.
    /// - Parameter length: 43 to 128; the default, 64, carries about 384 bits.
    public static func generate(length: Int = 64) -> CodeVerifier {
        precondition((43...128).contains(length), "RFC 7636 §4.1: a verifier is 43 to 128 characters")
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        var generator = SystemRandomNumberGenerator()
        // 66 symbols: draw uniformly (no modulo bias) with random(in:).
        let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        return CodeVerifier(unchecked: String(decoding: bytes, as: UTF8.self))
    }

    private init(unchecked value: String) { self.value = value }

    /// The S256 code challenge of this verifier: `BASE64URL(SHA256(ASCII(code_verifier)))` (RFC 7636 §4.2).
    public var s256Challenge: String {
        Base64URL.encode(SHA256.hash(data: Data(value.utf8)))
    }

    /// Whether `value` is 43 to 128 characters of `A-Z a-z 0-9 - . _ ~`.
    public static func isWellFormed(_ value: String) -> Bool {
        let bytes = value.utf8
        guard (43...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy(Self.isUnreserved)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// Redacted: a verifier is a secret until the code is redeemed.
    public var description: String { "CodeVerifier(<redacted>)" }
}
