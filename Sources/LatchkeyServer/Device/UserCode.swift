import LatchkeyCore

/// The `user_code` of the device authorization grant (RFC 8628 §6.1): eight letters from twenty
/// consonants (no vowels, so no words; none of the letters people confuse with digits), about
/// 34.5 bits, shown as `XXXX-XXXX`. Entry is forgiving: case, spaces and dashes do not matter.
enum UserCode {
    static let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
    static let length = 8

    /// A new code, drawn uniformly from the system CSPRNG, in its normal form (no dash).
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    /// The code as people read it: `WDJB-MJHT`.
    static func display(_ code: String) -> String {
        String(code.prefix(4)) + "-" + String(code.dropFirst(4))
    }

    /// What a user typed, in normal form, or `nil` when it cannot be a code: upper-cased, with
    /// spaces and dashes left out.
    static func normalize(_ typed: String) -> String? {
        let letters = typed.uppercased().filter { $0 != "-" && $0 != " " }
        guard letters.count == length, letters.allSatisfy(alphabet.contains) else { return nil }
        return letters
    }

    /// How a code is stored: SHA-256 of its normal form.
    static func hash(_ code: String) -> String { RandomToken.hash(code) }
}
