import Crypto
import CryptoExtras
import Foundation
import LatchkeyCore
import Testing

/// Client assertions (RFC 7523 §3): what an assertion must be, and the forgeries that must fail
/// (docs/threat-model.md CA1–CA6).
@Suite("JWT assertions")
struct JWTAssertionTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let issuer = "https://auth.example.com"
    let ec = P256.Signing.PrivateKey()
    let ed = Curve25519.Signing.PrivateKey()

    func keySet(_ keys: [String]) throws -> AssertionKeySet {
        try AssertionKeySet(json: Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8))
    }

    func ecJWK(_ key: P256.Signing.PublicKey, kid: String = "ec-1") -> String {
        PublicJWK(key).json(adding: [("kid", kid), ("use", "sig")])
    }

    func token(header: String, claims: String, sign: (Data) throws -> Data) rethrows -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }

    func claims(aud: String? = nil, exp: TimeInterval = 60, extra: String = "", jti: String = "j1") -> String {
        let audience = aud ?? #""\#(issuer)""#
        return
            #"{"iss":"c1","sub":"c1","aud":\#(audience),"exp":\#(Int(now.timeIntervalSince1970 + exp)),"jti":"\#(jti)"\#(extra)}"#
    }

    func es256(_ claims: String, kid: String? = "ec-1", key: P256.Signing.PrivateKey? = nil) throws -> String {
        let header = kid.map { #"{"alg":"ES256","kid":"\#($0)"}"# } ?? #"{"alg":"ES256"}"#
        return try token(header: header, claims: claims) { try (key ?? ec).signature(for: $0).rawRepresentation }
    }

    /// Why `token` is refused, or `nil` when it is accepted.
    func refused(_ token: String, keys: AssertionKeySet? = nil) throws -> String? {
        do {
            _ = try JWTAssertion(
                verifying: token, keys: try keys ?? keySet([ecJWK(ec.publicKey)]), audiences: [issuer, issuer + "/oauth2/token"],
                now: now)
            return nil
        } catch { return "\(error)" }
    }

    @Test("ES256, RS256, PS256 and EdDSA assertions verify with the registered keys")
    func algorithms() throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rsaJWK = try PublicJWK(rsa.publicKey).json(adding: [("kid", "rsa-1")])
        let edJWK = #"{"kty":"OKP","crv":"Ed25519","kid":"ed-1","x":"\#(Base64URL.encode(ed.publicKey.rawRepresentation))"}"#
        let keys = try keySet([ecJWK(ec.publicKey), rsaJWK, edJWK])
        #expect(try refused(try es256(claims()), keys: keys) == nil)
        let rs256 = try token(header: #"{"alg":"RS256","kid":"rsa-1"}"#, claims: claims()) {
            try rsa.signature(for: SHA256.hash(data: $0), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        #expect(try refused(rs256, keys: keys) == nil)
        let ps256 = try token(header: #"{"alg":"PS256","kid":"rsa-1"}"#, claims: claims()) {
            try rsa.signature(for: SHA256.hash(data: $0), padding: .PSS).rawRepresentation
        }
        #expect(try refused(ps256, keys: keys) == nil)
        let eddsa = try token(header: #"{"alg":"EdDSA","kid":"ed-1"}"#, claims: claims()) { try ed.signature(for: $0) }
        #expect(try refused(eddsa, keys: keys) == nil)
        // One key per algorithm: no kid is needed.
        #expect(try refused(try es256(claims(), kid: nil), keys: keys) == nil)
        let verified = try JWTAssertion(verifying: try es256(claims()), keys: keys, audiences: [issuer], now: now)
        #expect(verified.subject == "c1" && verified.jti == "j1")
    }

    @Test("CA4 alg none, an HMAC with the public key, a key in the header, another key under the kid are refused")
    func forgeries() throws {
        let unsigned = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Data(claims().utf8)) + "."
        #expect(try refused(unsigned)?.contains("alg") == true)
        let secret = SymmetricKey(data: Data(ecJWK(ec.publicKey).utf8))
        let hmac = token(header: #"{"alg":"HS256","kid":"ec-1"}"#, claims: claims()) {
            Data(HMAC<SHA256>.authenticationCode(for: $0, using: secret))
        }
        #expect(try refused(hmac)?.contains("alg") == true)
        let attacker = P256.Signing.PrivateKey()
        let embedded = try token(
            header: #"{"alg":"ES256","kid":"ec-1","jwk":\#(PublicJWK(attacker.publicKey).json())}"#, claims: claims()
        ) { try attacker.signature(for: $0).rawRepresentation }
        #expect(try refused(embedded)?.contains("jwk") == true)
        #expect(try refused(try es256(claims(), key: attacker))?.contains("signature") == true)
        #expect(try refused(try es256(claims(), kid: "other"))?.contains("kid") == true)
        // A payload changed after signing.
        let good = try es256(claims())
        let parts = good.split(separator: ".")
        let altered = parts[0] + "." + Base64URL.encode(Data(claims(jti: "j2").utf8)) + "." + parts[2]
        #expect(try refused(String(altered)) != nil)
    }

    @Test("CA2, CA3 aud must name this server; exp must be there, not past, at most an hour ahead; nbf, iat, jti")
    func claimsAreChecked() throws {
        #expect(try refused(try es256(claims(aud: #""https://other.example""#)))?.contains("aud") == true)
        #expect(try refused(try es256(claims(aud: #"["https://other.example","\#(issuer)/oauth2/token"]"#))) == nil)
        #expect(
            try refused(try es256(#"{"iss":"c1","sub":"c1","exp":\#(Int(now.timeIntervalSince1970) + 60),"jti":"j"}"#)) != nil)
        #expect(try refused(try es256(claims(exp: -61)))?.contains("expired") == true)
        #expect(try refused(try es256(claims(exp: -30))) == nil, "within the leeway")
        #expect(try refused(try es256(claims(exp: 3600 + 61)))?.contains("3600") == true)
        #expect(try refused(try es256(claims(exp: 3600))) == nil)
        #expect(try refused(try es256(#"{"iss":"c1","sub":"c1","aud":"\#(issuer)","jti":"j"}"#))?.contains("exp") == true)
        #expect(try refused(try es256(claims(extra: #","nbf":\#(Int(now.timeIntervalSince1970) + 120)"#))) != nil)
        #expect(try refused(try es256(claims(extra: #","iat":\#(Int(now.timeIntervalSince1970) + 120)"#))) != nil)
        #expect(try refused(try es256(claims(jti: ""))) != nil)
        #expect(try refused(try es256(claims(extra: #","exp":true"#))) != nil)
    }

    @Test("CA6 A key set with a private key is refused whole; encryption keys and unknown kinds are skipped")
    func keySets() throws {
        let privateJWK = #"{"kty":"EC","crv":"P-256","x":"x","y":"y","d":"secret"}"#
        #expect(throws: JWTAssertion.Rejection.self) { try keySet([ecJWK(ec.publicKey), privateJWK]) }
        #expect(throws: JWTAssertion.Rejection.self) { try keySet([]) }
        #expect(throws: JWTAssertion.Rejection.self) { try AssertionKeySet(json: Data("[]".utf8)) }
        let encryption = PublicJWK(P256.Signing.PrivateKey().publicKey).json(adding: [("kid", "enc"), ("use", "enc")])
        let symmetric = #"{"kty":"oct","kid":"s"}"#
        let set = try keySet([encryption, symmetric, ecJWK(ec.publicKey)])
        #expect(set.entries.count == 1)
        #expect(set.lacks(kid: "enc") && !set.lacks(kid: "ec-1") && !set.lacks(kid: nil))
        // An RSA key marked for RS256 does not verify PS256.
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let marked = try keySet([try PublicJWK(rsa.publicKey).json(adding: [("kid", "r"), ("alg", "RS256")])])
        let ps256 = try token(header: #"{"alg":"PS256","kid":"r"}"#, claims: claims()) {
            try rsa.signature(for: SHA256.hash(data: $0), padding: .PSS).rawRepresentation
        }
        #expect(try refused(ps256, keys: marked) != nil)
    }

    @Test("CA6 Only a refusal after the signature verified may be told to the sender")
    func refusalStages() throws {
        func stage(_ token: String) throws -> Bool? {
            let keys = try keySet([ecJWK(ec.publicKey)])
            do throws(JWTAssertion.Rejection) {
                _ = try JWTAssertion(verifying: token, keys: keys, audiences: [issuer], now: now)
                return nil
            } catch { return error.signatureVerified }
        }
        #expect(try stage(try es256(claims(), kid: "unknown")) == false)
        #expect(try stage(try es256(claims(), key: P256.Signing.PrivateKey())) == false)
        #expect(try stage("not.a.jwt") == false)
        #expect(try stage(try es256(claims(aud: #""https://other.example""#))) == true)
        #expect(try stage(try es256(claims(exp: -600))) == true)
    }

    @Test("The client library's assertion verifies, and names the client and the audience")
    func made() throws {
        let assertion = try JWTAssertion.clientAssertion(key: ec, kid: "ec-1", clientID: "c1", audience: issuer, issuedAt: now)
        let verified = try JWTAssertion(
            verifying: assertion, keys: try keySet([ecJWK(ec.publicKey)]), audiences: [issuer], now: now)
        #expect(verified.issuer == "c1" && verified.subject == "c1" && verified.audiences == [issuer])
        #expect(verified.expiresAt == now.addingTimeInterval(60))
        #expect(JWTAssertion.unverified(assertion)?.kid == "ec-1")
    }
}
