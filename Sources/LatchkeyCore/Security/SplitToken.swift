import Crypto
import Foundation

/// A token of two parts (docs/design.md §6): a readable prefix, a public **selector** that names
/// the token's row, and a secret **verifier** of 256 bits whose SHA-256 the row holds.
///
/// `lk_at_` + 16 characters of selector + 43 of verifier, all base64url without padding. The
/// selector is 12 bytes: the issue time in milliseconds (6 bytes, big-endian) and 6 random bytes,
/// so new rows append to the store's index instead of landing on a random page of it. The store
/// keys the row by the selector in lowercase hex (24 digits), which sorts by time as the bytes do;
/// the verifier is never stored, only its digest, and is compared in constant time.
///
/// Tokens issued before split tokens (prefix + 43 characters, stored by the SHA-256 of the whole
/// value) do not parse as a `SplitToken` and keep being looked up by that hash.
public struct SplitToken: Sendable, Equatable {
    /// The token as handed to the client.
    public let value: String
    /// The key of the token's row: the selector's 12 bytes in lowercase hex.
    public let selector: String
    /// SHA-256 of the verifier, in lowercase hex: what the row holds and the presented token must match.
    public let verifierDigest: String

    /// Characters of the selector and of the verifier, after the prefix.
    static let selectorLength = 16
    static let verifierLength = 43

    /// A new token of `kind`, its selector ordered by `issuedAt`.
    public static func generate(_ kind: RandomToken.Kind, issuedAt: Date) -> SplitToken {
        var generator = SystemRandomNumberGenerator()
        var selector: [UInt8] = []
        selector.reserveCapacity(12)
        let milliseconds = UInt64(max(0, issuedAt.timeIntervalSince1970 * 1000))
        for shift in stride(from: 40, through: 0, by: -8) { selector.append(UInt8(truncatingIfNeeded: milliseconds >> shift)) }
        withUnsafeBytes(of: generator.next() as UInt64) { selector.append(contentsOf: $0.prefix(6)) }
        let verifier = RandomToken.randomBase64URL(byteCount: 32)
        return SplitToken(
            value: kind.rawValue + Base64URL.encode(selector) + verifier, selector: RandomToken.lowercaseHex(selector),
            verifierDigest: RandomToken.hash(verifier))
    }

    /// The parts of a presented token, or `nil` when it is not a split token: another length, a
    /// prefix Latchkey does not split, or a character outside base64url. Works on the UTF-8 bytes
    /// (this runs on every bearer request).
    public init?(parsing value: some StringProtocol) {
        // The length first: a JWT access token (hundreds of bytes) is not copied just to be refused.
        guard value.utf8.count == 6 + Self.selectorLength + Self.verifierLength else { return nil }
        let bytes = Array(value.utf8)
        guard let kind = RandomToken.Kind(rawValue: String(decoding: bytes[0..<6], as: UTF8.self)), kind.isSplit,
            let selector = Self.selectorBytes(bytes[6..<(6 + Self.selectorLength)])
        else { return nil }
        let verifier = bytes[(6 + Self.selectorLength)...]
        guard verifier.allSatisfy({ Self.sextet($0) != nil }) else { return nil }
        self.value = String(value)
        self.selector = RandomToken.lowercaseHex(selector)
        self.verifierDigest = RandomToken.lowercaseHex(SHA256.hash(data: verifier))
    }

    /// The value of a base64url character, or `nil` for any other byte.
    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    /// The 12 bytes of the 16 selector characters (four groups of four characters, three bytes
    /// each), or `nil` for a character outside base64url.
    private static func selectorBytes(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        var group: UInt32 = 0
        for (index, character) in text.enumerated() {
            guard let sextet = sextet(character) else { return nil }
            group = group << 6 | UInt32(sextet)
            if index % 4 == 3 {
                bytes += [
                    UInt8(truncatingIfNeeded: group >> 16), UInt8(truncatingIfNeeded: group >> 8),
                    UInt8(truncatingIfNeeded: group),
                ]
                group = 0
            }
        }
        return bytes.count == 12 ? bytes : nil
    }

    private init(value: String, selector: String, verifierDigest: String) {
        self.value = value
        self.selector = selector
        self.verifierDigest = verifierDigest
    }
}

extension RandomToken.Kind {
    /// Whether Latchkey issues this kind as a ``SplitToken``: codes and tokens, which are written
    /// on every grant; the rest are written rarely enough that a random key costs nothing.
    public var isSplit: Bool {
        switch self {
        case .accessToken, .refreshToken, .authorizationCode: true
        default: false
        }
    }
}
