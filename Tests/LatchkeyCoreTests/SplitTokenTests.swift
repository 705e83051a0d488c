import Foundation
import LatchkeyCore
import Testing

@Suite("Split tokens: a time-ordered selector and a secret verifier")
struct SplitTokenTests {
    @Test("A token is the prefix, 16 characters of selector and 43 of verifier, and parses back to its parts")
    func shapeAndRoundTrip() throws {
        let issuedAt = Date(timeIntervalSince1970: 1_790_000_000.123)
        for kind in RandomToken.Kind.allCases where kind.isSplit {
            let token = SplitToken.generate(kind, issuedAt: issuedAt)
            #expect(token.value.hasPrefix(kind.rawValue) && token.value.count == 6 + 16 + 43)
            #expect(Base64URL.isAlphabet(token.value.dropFirst(6).utf8))
            #expect(token.selector.count == 24 && token.selector.allSatisfy(\.isHexDigit))
            #expect(token.selector.hasPrefix(String(1_790_000_000_123, radix: 16).leftPadded(to: 12)))
            // The verifier is the last 43 characters; the row holds only its SHA-256.
            #expect(token.verifierDigest == RandomToken.hash(String(token.value.suffix(43))))
            #expect(SplitToken(parsing: token.value) == token)
        }
    }

    @Test("Selectors sort by issue time as text, so new rows append to the index")
    func selectorsAreTimeOrdered() {
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let selectors = (0..<500).map { SplitToken.generate(.refreshToken, issuedAt: start + Double($0) / 100).selector }
        for (earlier, later) in zip(selectors, selectors.dropFirst()) where earlier.prefix(12) != later.prefix(12) {
            #expect(earlier < later)
        }
        #expect(Set(selectors).count == selectors.count)
        let verifiers = (0..<500).map { _ in SplitToken.generate(.accessToken, issuedAt: start).verifierDigest }
        #expect(Set(verifiers).count == verifiers.count, "the verifier carries the secret, not the time")
    }

    @Test("Tokens issued before split tokens, other kinds, other lengths and odd characters do not parse")
    func notSplit() {
        let token = SplitToken.generate(.accessToken, issuedAt: Date()).value
        #expect(SplitToken(parsing: RandomToken.generate(.accessToken)) == nil, "the older form: prefix and 43")
        #expect(SplitToken(parsing: "lk_cs_" + token.dropFirst(6)) == nil, "client secrets stay whole")
        #expect(SplitToken(parsing: "lk_zz_" + token.dropFirst(6)) == nil)
        #expect(SplitToken(parsing: token + "A") == nil)
        #expect(SplitToken(parsing: token.dropLast()) == nil)
        #expect(SplitToken(parsing: token.prefix(10) + "=" + token.dropFirst(11)) == nil, "not base64url in the selector")
        #expect(SplitToken(parsing: token.dropLast() + "\u{0}") == nil, "not base64url in the verifier")
        #expect(SplitToken(parsing: token.prefix(10) + "é" + token.dropFirst(12)) == nil, "a two-byte character")
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}
