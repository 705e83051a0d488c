import Crypto
import Foundation

/// A 256-bit random value from the system CSPRNG, base64url-encoded behind a short readable
/// prefix so that secret scanners can recognise leaked values (docs/design.md §6).
public enum RandomToken {
    /// The prefixes of the kinds of secret Latchkey issues.
    public enum Kind: String, Sendable, CaseIterable {
        case accessToken = "lk_at_"
        case refreshToken = "lk_rt_"
        case authorizationCode = "lk_ac_"
        case clientSecret = "lk_cs_"
        case session = "lk_ss_"
        case csrf = "lk_xs_"
        case pendingRequest = "lk_rq_"
        /// RFC 7592 §3: lets a dynamically registered client read, update and delete its registration.
        case registrationAccessToken = "lk_ra_"
        /// RFC 7591 §3: lets a developer register a client when registration is not open.
        case initialAccessToken = "lk_ia_"
        /// RFC 9126 §2.2: names a pushed authorization request, inside its `request_uri`.
        case pushedRequest = "lk_pr_"
        /// RFC 8628 §3.2: the `device_code` a device polls the token endpoint with.
        case deviceCode = "lk_dc_"
        /// An e-mailed link's secret: it verifies an address, resets a password or redeems an invitation.
        case accountLink = "lk_el_"
    }

    /// A new value of the given kind: the prefix followed by 43 base64url characters (256 bits).
    public static func generate(_ kind: Kind) -> String {
        kind.rawValue + randomBase64URL(byteCount: 32)
    }

    /// `byteCount` bytes from the system CSPRNG, base64url-encoded without padding.
    public static func randomBase64URL(byteCount: Int) -> String {
        // Eight bytes per draw: each draw is a getrandom(2) call, and one per byte showed in profiles.
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount + 7)
        while bytes.count < byteCount {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Base64URL.encode(bytes.prefix(byteCount))
    }

    /// `length` characters from `A-Z a-z 0-9`, uniformly drawn from the system CSPRNG: for
    /// identifiers people type and pass on command lines (no leading `-`).
    public static func alphanumeric(length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The lowercase hex SHA-256 of a token: the only form in which Latchkey stores secrets it issued.
    public static func hash(_ token: String) -> String {
        lowercaseHex(SHA256.hash(data: Data(token.utf8)))
    }

    /// Bytes as lowercase hexadecimal, two digits each.
    public static func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 15)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
