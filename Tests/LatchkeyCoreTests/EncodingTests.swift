import Foundation
import LatchkeyCore
import Testing

@Suite("Base64url and token hashes")
struct EncodingTests {
    @Test("Base64URL.encode agrees with Foundation's base64, alphabet swapped and padding dropped, at every length mod 3")
    func base64URLMatchesFoundation() {
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected, "length \(length)")
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
    }

    @Test("Random tokens are the prefix and 43 base64url characters, and differ")
    func randomTokens() {
        let values = (0..<1000).map { _ in RandomToken.generate(.accessToken) }
        #expect(Set(values).count == values.count)
        for value in values {
            #expect(value.hasPrefix("lk_at_") && value.count == 6 + 43)
            #expect(Base64URL.isAlphabet(value.dropFirst(6).utf8))
        }
    }

    @Test("RandomToken.hash is SHA-256 in lowercase hex")
    func hashIsLowercaseHex() {
        // FIPS 180-2 test vector for "abc".
        #expect(RandomToken.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("Authorization headers: the scheme in any ASCII case, credentials trimmed, another scheme refused")
    func authorizationCredentials() {
        #expect(HeaderText.credentials("Bearer abc", scheme: "Bearer") == "abc")
        #expect(HeaderText.credentials("bEARER \t abc \t", scheme: "Bearer") == "abc")
        #expect(HeaderText.credentials("Basic abc", scheme: "Bearer") == nil)
        #expect(HeaderText.credentials("Bearer", scheme: "Bearer") == nil)
        #expect(HeaderText.credentials("Bearerx abc", scheme: "Bearer") == nil)
        #expect(HeaderText.credentials("Bearer    ", scheme: "Bearer") == "")
        #expect(
            HeaderText.hasPrefixIgnoringASCIICase(
                "Application/X-WWW-Form-Urlencoded; charset=UTF-8", "application/x-www-form-urlencoded"))
        #expect(!HeaderText.hasPrefixIgnoringASCIICase("app", "application"))
        #expect(!HeaderText.equalsIgnoringASCIICase("ſ", "s"))  // no Unicode folding
    }

    @Test("JSONText.quote copies plain ASCII whole and escapes everything else as before")
    func jsonQuote() {
        #expect(JSONText.quote("lk_at_abc-_ 09~") == #""lk_at_abc-_ 09~""#)
        #expect(JSONText.quote("a\"b\\c<d\n\u{1}é") == #""a\"b\\c\u003cd\n\u0001é""#)
        #expect(JSONText.quote("") == #""""#)
    }
}

@Suite("Base32 (RFC 4648 §6)")
struct Base32Tests {
    @Test("The RFC's test vectors, both ways, without padding")
    func vectors() {
        let vectors = [
            ("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base32.encode(Array(plain.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(plain.utf8))
            #expect(Base32.decode(encoded.lowercased() + "======") == Array(plain.utf8))
        }
        #expect(Base32.decode("MZXW1") == nil)  // not in the alphabet
        #expect(Base32.decode("MZXW7") == nil)  // leftover bits that are not zero
    }
}
