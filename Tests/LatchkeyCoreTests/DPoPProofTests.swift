import Crypto
import CryptoExtras
import Foundation
import LatchkeyCore
import Testing

/// DPoP proofs (RFC 9449 §4.3): what a proof must be, and the forgeries that must fail.
@Suite("DPoP proofs")
struct DPoPProofTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let url = "https://auth.example.com/oauth2/token"
    let key = P256.Signing.PrivateKey()

    func verify(_ proof: String, method: String = "POST", url: String? = nil, accessToken: String? = nil) throws
        -> DPoPProof
    {
        try DPoPProof(verifying: proof, method: method, url: url ?? self.url, accessToken: accessToken, now: now)
    }

    /// Why `proof` is refused, or `nil` when it is accepted.
    func refused(_ proof: String, method: String = "POST", url: String? = nil, accessToken: String? = nil) -> String? {
        do {
            _ = try verify(proof, method: method, url: url, accessToken: accessToken)
            return nil
        } catch { return "\(error)" }
    }

    /// A proof with any header and claims, signed by `sign`.
    func token(header: String, claims: String, sign: (Data) throws -> Data) rethrows -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }

    func claims(htm: String = "POST", htu: String? = nil, iat: Date? = nil, extra: String = "") -> String {
        let iat = Int((iat ?? now).timeIntervalSince1970)
        return #"{"jti":"j-\#(UUID().uuidString)","htm":"\#(htm)","htu":"\#(htu ?? url)","iat":\#(iat)\#(extra)}"#
    }

    var es256Header: String { #"{"typ":"dpop+jwt","alg":"ES256","jwk":"# + DPoPProof.publicJWK(of: key.publicKey) + "}" }

    func es256(_ claims: String, header: String? = nil, signer: P256.Signing.PrivateKey? = nil) throws -> String {
        try token(header: header ?? es256Header, claims: claims) { try (signer ?? key).signature(for: $0).rawRepresentation }
    }

    @Test("An ES256 proof made by make(…) verifies; its thumbprint is the key's (RFC 7638)")
    func es256RoundTrip() throws {
        let proof = try DPoPProof.make(key: key, method: "POST", url: url + "?x=1#f", issuedAt: now, jti: "abc")
        let checked = try verify(proof)
        #expect(checked.jti == "abc")
        #expect(checked.keyThumbprint == DPoPProof.thumbprint(of: key.publicKey))
        #expect(checked.nonce == nil)
        // RFC 7638 §3.2: the required members in lexicographic order, no whitespace.
        let raw = key.publicKey.rawRepresentation
        let canonical =
            #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(raw.prefix(32)))","y":"\#(Base64URL.encode(raw.suffix(32)))"}"#
        #expect(checked.keyThumbprint == Base64URL.encode(SHA256.hash(data: Data(canonical.utf8))))
        #expect(checked.keyThumbprint != DPoPProof.thumbprint(of: P256.Signing.PrivateKey().publicKey))
    }

    @Test("RS256 and EdDSA proofs verify too; an RSA key under 2048 bits does not")
    func otherAlgorithms() throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let (n, e) = rsaComponents(rsa.publicKey)
        let rsaHeader = #"{"typ":"dpop+jwt","alg":"RS256","jwk":{"kty":"RSA","n":"\#(n)","e":"\#(e)"}}"#
        let rsaProof = try token(header: rsaHeader, claims: claims()) {
            try rsa.signature(for: $0, padding: .insecurePKCS1v1_5).rawRepresentation
        }
        let canonical = #"{"e":"\#(e)","kty":"RSA","n":"\#(n)"}"#
        #expect(try verify(rsaProof).keyThumbprint == Base64URL.encode(SHA256.hash(data: Data(canonical.utf8))))

        let ed = Curve25519.Signing.PrivateKey()
        let x = Base64URL.encode(ed.publicKey.rawRepresentation)
        let edHeader = #"{"typ":"dpop+jwt","alg":"EdDSA","jwk":{"kty":"OKP","crv":"Ed25519","x":"\#(x)"}}"#
        let edProof = try token(header: edHeader, claims: claims()) { try ed.signature(for: $0) }
        let edCanonical = #"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#
        #expect(try verify(edProof).keyThumbprint == Base64URL.encode(SHA256.hash(data: Data(edCanonical.utf8))))

        let shortModulus = Base64URL.encode([UInt8](repeating: 0xC1, count: 128))
        let short = #"{"typ":"dpop+jwt","alg":"RS256","jwk":{"kty":"RSA","n":"\#(shortModulus)","e":"AQAB"}}"#
        #expect(refused(token(header: short, claims: claims()) { _ in Data(count: 128) })?.contains("2048") == true)
    }

    /// The modulus and exponent of an RSA public key, base64url, read from its PKCS #1 DER.
    func rsaComponents(_ key: _RSA.Signing.PublicKey) -> (String, String) {
        let der = [UInt8](key.pkcs1DERRepresentation)
        var index = 0
        func length() -> Int {
            var count = Int(der[index])
            index += 1
            if count & 0x80 != 0 {
                let bytes = count & 0x7f
                count = 0
                for _ in 0..<bytes {
                    count = count << 8 | Int(der[index])
                    index += 1
                }
            }
            return count
        }
        func integer() -> [UInt8] {
            index += 1  // the INTEGER tag
            let count = length()
            var value = Array(der[index..<index + count])
            index += count
            while value.first == 0, value.count > 1 { value.removeFirst() }
            return value
        }
        index += 1  // the SEQUENCE tag
        _ = length()
        let n = integer()
        let e = integer()
        return (Base64URL.encode(n), Base64URL.encode(e))
    }

    @Test("Wrong htm or htu, a stale or future iat, a wrong or missing ath, no jti: refused")
    func claimsChecked() throws {
        #expect(refused(try es256(claims(htm: "GET")))?.contains("htm") == true)
        #expect(refused(try es256(claims(htu: "https://auth.example.com/userinfo")))?.contains("htu") == true)
        #expect(refused(try es256(claims(htu: "https://evil.example/oauth2/token")))?.contains("htu") == true)
        // Case of scheme and host, a default port, query and fragment do not matter.
        #expect(refused(try es256(claims(htu: "HTTPS://Auth.Example.com:443/oauth2/token?a=b#c"))) == nil)
        #expect(refused(try es256(claims(iat: now.addingTimeInterval(-121))))?.contains("iat") == true)
        #expect(refused(try es256(claims(iat: now.addingTimeInterval(61))))?.contains("iat") == true)
        #expect(refused(try es256(claims(iat: now.addingTimeInterval(-119)))) == nil)
        let ath = Base64URL.encode(SHA256.hash(data: Data("lk_at_token".utf8)))
        #expect(refused(try es256(claims(extra: #","ath":"\#(ath)""#)), accessToken: "lk_at_token") == nil)
        #expect(refused(try es256(claims(extra: #","ath":"\#(ath)""#)), accessToken: "lk_at_other")?.contains("ath") == true)
        #expect(refused(try es256(claims()), accessToken: "lk_at_token")?.contains("ath") == true)
        let noJTI = #"{"htm":"POST","htu":"\#(url)","iat":\#(Int(now.timeIntervalSince1970))}"#
        #expect(refused(try es256(noJTI))?.contains("jti") == true)
        #expect(refused(try es256(claims(extra: #","nonce":5"#)))?.contains("nonce") == true)
        #expect(try verify(try es256(claims(extra: #","nonce":"n1""#))).nonce == "n1")
    }

    @Test("Another key's signature, alg none or HS256, a wrong typ, a private or mismatched jwk: refused")
    func forgeries() throws {
        let jwk = DPoPProof.publicJWK(of: key.publicKey)
        #expect(refused(try es256(claims(), signer: P256.Signing.PrivateKey()))?.contains("signature") == true)
        let none = #"{"typ":"dpop+jwt","alg":"none","jwk":"# + jwk + "}"
        #expect(refused(token(header: none, claims: claims()) { _ in Data() })?.contains("alg") == true)
        let hmac = #"{"typ":"dpop+jwt","alg":"HS256","jwk":"# + jwk + "}"
        #expect(refused(try es256(claims(), header: hmac))?.contains("alg") == true)
        let jwt = #"{"typ":"JWT","alg":"ES256","jwk":"# + jwk + "}"
        #expect(refused(try es256(claims(), header: jwt))?.contains("typ") == true)
        let withPrivate = String(jwk.dropLast()) + #","d":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        let leaked = #"{"typ":"dpop+jwt","alg":"ES256","jwk":"# + withPrivate + "}"
        #expect(refused(try es256(claims(), header: leaked))?.contains("private") == true)
        let mismatch = #"{"typ":"dpop+jwt","alg":"RS256","jwk":"# + jwk + "}"
        #expect(refused(try es256(claims(), header: mismatch))?.contains("does not fit") == true)
        #expect(refused(try es256(claims(), header: #"{"typ":"dpop+jwt","alg":"ES256"}"#))?.contains("jwk") == true)
        #expect(refused("not.a.jws") != nil)
        #expect(refused("") != nil)
    }
}

/// RFC 7638, the one thumbprint every `jkt` and `kid` is.
@Suite("JWK thumbprints")
struct JWKThumbprintTests {
    @Test("RFC 7638 §3.1's example RSA key has the thumbprint the RFC gives, whatever order its members come in")
    func rfcExample() {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
            + "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHz"
            + "u6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8a"
            + "wapJzKnqDKgw"
        #expect(JWKThumbprint.of([("kty", "RSA"), ("n", n), ("e", "AQAB")]) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test("A P-256 key's thumbprint is that of its published JWK's required members")
    func p256() {
        let key = P256.Signing.PrivateKey().publicKey
        let raw = key.rawRepresentation
        let members = [
            ("x", Base64URL.encode(raw.prefix(32))), ("y", Base64URL.encode(raw.suffix(32))), ("crv", "P-256"), ("kty", "EC"),
        ]
        #expect(PublicJWK(key).thumbprint == JWKThumbprint.of(members.map { (name: $0.0, value: $0.1) }))
        #expect(DPoPProof.thumbprint(of: key) == PublicJWK(key).thumbprint)
    }

    @Test("The RFC 7638 example key read as a JWK has the RFC's thumbprint and publishes its members unchanged")
    func readRFCExample() throws {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
            + "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHz"
            + "u6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8a"
            + "wapJzKnqDKgw"
        let jwk = try PublicJWK(parsing: ["kty": "RSA", "n": n, "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"])
        #expect(jwk.thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        #expect(jwk.algorithm == "RS256" && jwk.member("n") == n)
        #expect(jwk.json(adding: [("kid", "k")]) == #"{"e":"AQAB","kid":"k","kty":"RSA","n":"\#(n)"}"#)
        // A key with private members, a short RSA key, or an unknown curve is not read.
        #expect(throws: PublicJWK.Rejection.self) { try PublicJWK(parsing: ["kty": "RSA", "n": n, "e": "AQAB", "d": "AQAB"]) }
        #expect(throws: PublicJWK.Rejection.self) { try PublicJWK(parsing: ["kty": "RSA", "n": "AQAB", "e": "AQAB"]) }
        #expect(throws: PublicJWK.Rejection.self) { try PublicJWK(parsing: ["kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"]) }
    }
}
