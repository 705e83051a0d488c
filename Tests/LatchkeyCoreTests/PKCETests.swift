import LatchkeyCore
import Testing

@Suite("PKCE (RFC 7636)")
struct PKCETests {
    @Test(
        "S256 test vectors: Fitbit's documented example and RFC 7636 Appendix B",
        arguments: [
            ("01234567890123456789012345678901234567890123456789", "-4cf-Mzo_qg9-uq0F4QwWhRh4AjcAqNx7SbYVsdmyQM"),
            ("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
        ])
    func s256Vectors(verifier: String, challenge: String) throws {
        let parsed = try #require(CodeVerifier(verifier))
        #expect(parsed.s256Challenge == challenge)
        #expect(try #require(CodeChallenge(challenge)).isSatisfied(by: parsed))
    }

    @Test("Generated verifiers are 43 to 128 unreserved characters and never repeat")
    func generatedVerifiers() {
        var seen = Set<String>()
        for length in [43, 64, 128] {
            for _ in 0..<500 {
                let verifier = CodeVerifier.generate(length: length)
                #expect(verifier.value.count == length)
                #expect(CodeVerifier.isWellFormed(verifier.value))
                seen.insert(verifier.value)
            }
        }
        #expect(seen.count == 1500)
        // Every character of the alphabet shows up over many draws (no missing symbols).
        let used = Set(seen.joined())
        #expect(used == Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))
    }

    @Test(
        "Verifier ABNF: 43*128unreserved",
        arguments: [
            (String(repeating: "a", count: 43), true),
            (String(repeating: "a", count: 128), true),
            (String(repeating: "-._~", count: 11), true),
            (String(repeating: "a", count: 42), false),
            (String(repeating: "a", count: 129), false),
            (String(repeating: "a", count: 42) + "$", false),
            (String(repeating: "a", count: 42) + " ", false),
            (String(repeating: "a", count: 42) + "é", false),
            (String(repeating: "a", count: 42) + "\u{0}", false),
            (String(repeating: "a", count: 40) + "%2B", false),
        ])
    func verifierGrammar(value: String, valid: Bool) {
        #expect((CodeVerifier(value) != nil) == valid)
    }

    @Test(
        "Challenges must be exactly 43 base64url characters",
        arguments: [
            (String(repeating: "A", count: 43), true),
            (String(repeating: "A", count: 42), false),
            (String(repeating: "A", count: 44), false),
            (String(repeating: "A", count: 42) + "=", false),
            (String(repeating: "A", count: 42) + "+", false),
            (String(repeating: "A", count: 42) + "/", false),
        ])
    func challengeGrammar(value: String, valid: Bool) {
        #expect((CodeChallenge(value) != nil) == valid)
    }

    @Test("A wrong verifier does not satisfy the challenge")
    func wrongVerifier() throws {
        let challenge = try #require(CodeChallenge("-4cf-Mzo_qg9-uq0F4QwWhRh4AjcAqNx7SbYVsdmyQM"))
        #expect(!challenge.isSatisfied(by: try #require(CodeVerifier(String(repeating: "0", count: 50)))))
    }

    @Test("A verifier does not print itself")
    func redacted() {
        #expect("\(CodeVerifier.generate())" == "CodeVerifier(<redacted>)")
    }
}

@Suite("Secrets")
struct SecretTests {
    @Test("Constant-time comparison gives the same answers as ==")
    func constantTime() {
        #expect(ConstantTime.equals("abc", "abc"))
        #expect(!ConstantTime.equals("abc", "abd"))
        #expect(!ConstantTime.equals("abc", "abcd"))
        #expect(!ConstantTime.equals("", "a"))
        #expect(ConstantTime.equals("", ""))
    }

    @Test("Tokens are prefixed 256-bit random values and hashed with SHA-256")
    func tokens() {
        let values = (0..<1000).map { _ in RandomToken.generate(.accessToken) }
        #expect(Set(values).count == 1000)
        for value in values.prefix(10) {
            #expect(value.hasPrefix("lk_at_"))
            #expect(value.count == 6 + 43)
        }
        #expect(RandomToken.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

@Suite("Identifiers")
struct IdentifierTests {
    @Test("Alphanumeric identifiers use only A-Z a-z 0-9, so none starts with a dash on a command line")
    func alphanumeric() {
        let values = (0..<2000).map { _ in RandomToken.alphanumeric(length: 16) }
        #expect(values.allSatisfy { $0.count == 16 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        #expect(Set(values).count == 2000)
    }
}
