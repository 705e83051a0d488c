import Crypto
import Foundation
import LatchkeyCore

/// A time-based one-time password generator (RFC 6238) as authenticator apps run it: HMAC-SHA-1
/// over 30-second time steps from the Unix epoch, six digits (RFC 4226 §5.3's truncation).
public struct TOTP: Sendable {
    /// The shared key: 20 random bytes (160 bits, RFC 4226 §4's recommended length).
    public let key: [UInt8]
    /// Seconds per time step (RFC 6238 §4.1, X).
    public static let period = 30
    /// Digits in a code.
    public static let digits = 6
    /// Steps either side of now whose codes are accepted, for clocks that drift and people who type
    /// slowly (RFC 6238 §5.2 recommends at most one).
    public static let tolerance = 1

    public init(key: [UInt8]) { self.key = key }

    /// A new random key from the system CSPRNG.
    public static func generateKey() -> TOTP {
        var generator = SystemRandomNumberGenerator()
        return TOTP(key: (0..<20).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The time step an instant falls in (RFC 6238 §4.2, T).
    public static func step(at date: Date) -> Int {
        Int((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// The code of time step `step`, `digits` long (HOTP, RFC 4226 §5.3, with the step as counter).
    public func code(step: Int, digits: Int = TOTP.digits) -> String {
        var counter = UInt64(max(step, 0)).bigEndian
        let message = withUnsafeBytes(of: &counter) { Data($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The time step within ``tolerance`` of `date` whose code is `code`, or `nil`. Every candidate
    /// is compared, in constant time, so the answer's timing does not tell which step matched.
    /// Whether that step was used before is the store's to say (``SecondFactorStore/useTOTP(id:step:at:)``).
    public func matchingStep(_ code: String, at date: Date) -> Int? {
        let typed = code.filter { $0 != " " }
        guard typed.utf8.count == Self.digits, typed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let now = Self.step(at: date)
        var found: Int?
        for step in (now - Self.tolerance)...(now + Self.tolerance) where ConstantTime.equals(self.code(step: step), typed) {
            found = step
        }
        return found
    }

    /// The key as authenticator apps take it typed: base32 in groups of four.
    public var keyText: String {
        let text = Base32.encode(key)
        return stride(from: 0, to: text.count, by: 4).map { start in
            let from = text.index(text.startIndex, offsetBy: start)
            return String(text[from..<(text.index(from, offsetBy: 4, limitedBy: text.endIndex) ?? text.endIndex)])
        }.joined(separator: " ")
    }

    /// The `otpauth://totp/` URI that authenticator apps read from a QR code: `issuer:account` as
    /// the label, the key in base32, and the default algorithm, digits and period spelled out.
    public func provisioningURI(issuer: String, account: String) -> String {
        func encode(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
        }
        return "otpauth://totp/\(encode(issuer)):\(encode(account))?secret=\(Base32.encode(key))&issuer=\(encode(issuer))"
            + "&algorithm=SHA1&digits=\(Self.digits)&period=\(Self.period)"
    }
}
