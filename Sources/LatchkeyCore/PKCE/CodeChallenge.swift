/// The PKCE code challenge (`code_challenge`, RFC 7636 §4.2) as Latchkey accepts it: S256 only,
/// so exactly 43 base64url characters (the encoding of a 32-byte SHA-256 digest).
public struct CodeChallenge: Sendable, Hashable {
    /// The challenge as sent on the wire.
    public let value: String

    /// The only transform Latchkey supports (`code_challenge_method=S256`). `plain` is refused
    /// (RFC 9700 §2.1.1: "S256 is the only such method").
    public static let method = "S256"

    /// Accepts a well-formed S256 challenge. - Returns: `nil` otherwise.
    public init?(_ value: String) {
        guard value.utf8.count == 43, Base64URL.isAlphabet(Substring(value).utf8) else { return nil }
        self.value = value
    }

    /// Whether `verifier` transforms into this challenge, compared in constant time (RFC 7636 §4.6).
    public func isSatisfied(by verifier: CodeVerifier) -> Bool {
        ConstantTime.equals(verifier.s256Challenge, value)
    }
}
