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
    /// prefix Latchkey does not split, or a selector that is not base64url.
    public init?(parsing value: some StringProtocol) {
        let text = Substring(value)
        guard text.utf8.count == 6 + Self.selectorLength + Self.verifierLength,
            let kind = RandomToken.Kind(rawValue: String(text.prefix(6))), kind.isSplit
        else { return nil }
        let selectorText = text.dropFirst(6).prefix(Self.selectorLength)
        let verifierText = text.suffix(Self.verifierLength)
        guard Base64URL.isAlphabet(verifierText.utf8), let selector = Self.selectorBytes(selectorText.utf8) else {
            return nil
        }
        self.value = String(text)
        self.selector = RandomToken.lowercaseHex(selector)
        self.verifierDigest = RandomToken.hash(String(verifierText))
    }

    /// The 12 bytes of 16 base64url characters (four groups of four characters, three bytes each),
    /// or `nil` for any other character. Written out because this runs on every bearer request.
    private static func selectorBytes(_ text: Substring.UTF8View) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        var group: UInt32 = 0
        var count = 0
        for character in text {
            let sextet: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): sextet = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): sextet = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sextet = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): sextet = 62
            case UInt8(ascii: "_"): sextet = 63
            default: return nil
            }
            group = group << 6 | UInt32(sextet)
            count += 1
            if count % 4 == 0 {
                bytes += [
                    UInt8(truncatingIfNeeded: group >> 16), UInt8(truncatingIfNeeded: group >> 8),
                    UInt8(truncatingIfNeeded: group),
                ]
                group = 0
            }
        }
        return count == selectorLength ? bytes : nil
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
