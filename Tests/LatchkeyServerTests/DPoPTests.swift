import Crypto
import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// DPoP (RFC 9449) on the endpoint logic: tokens bound to the proof's key, and the attacks that
/// must fail: a replayed proof, wrong htm or htu, a proof by another key, a bound token sent as a
/// bearer token, a missing or stale nonce.
@Suite("DPoP")
struct DPoPTests {
    let key = P256.Signing.PrivateKey()
    var tokenURL: String { Fixture.issuer + "/oauth2/token" }
    var userinfoURL: String { Fixture.issuer + "/userinfo" }

    func proof(
        _ fixture: Fixture, key: P256.Signing.PrivateKey? = nil, method: String = "POST", url: String? = nil,
        accessToken: String? = nil, nonce: String? = nil
    ) throws -> String {
        try DPoPProof.make(
            key: key ?? self.key, method: method, url: url ?? tokenURL, accessToken: accessToken, nonce: nonce,
            issuedAt: fixture.clock.now)
    }

    /// The native client's code exchanged with a proof.
    func exchange(_ fixture: Fixture, dpop: String?) async throws -> Result<TokenResponse, TokenEndpointError> {
        let code = try await fixture.code()
        return await fixture.server.tokenEndpoint.token(
            TokenRequest(
                body: FormParameters([
                    ("grant_type", "authorization_code"), ("code", code), ("client_id", fixture.native.id.rawValue),
                    ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_verifier", Fixture.verifier.value),
                ]), authorization: nil, dpop: dpop))
    }

    func refresh(_ fixture: Fixture, _ token: String, client: Client? = nil, authorization: String? = nil, dpop: String?)
        async -> Result<TokenResponse, TokenEndpointError>
    {
        var body = [("grant_type", "refresh_token"), ("refresh_token", token)]
        if authorization == nil { body.append(("client_id", (client ?? fixture.native).id.rawValue)) }
        return await fixture.server.tokenEndpoint.token(
            TokenRequest(body: FormParameters(body), authorization: authorization, dpop: dpop))
    }

    @Test("A code exchanged with a proof: token_type DPoP, both tokens bound to the key (cnf.jkt)")
    func boundAtExchange() async throws {
        let fixture = try await Fixture.make()
        let tokens = try await exchange(fixture, dpop: try proof(fixture)).get()
        #expect(tokens.tokenType == "DPoP")
        let thumbprint = DPoPProof.thumbprint(of: key.publicKey)
        let access = try #require(try await fixture.store.token(presented: tokens.accessToken))
        let refresh = try #require(try await fixture.store.token(presented: tokens.refreshToken!))
        #expect(access.keyThumbprint == thumbprint)
        #expect(refresh.keyThumbprint == thumbprint, "a public client's refresh token is bound too (§5)")

        // Without a proof, as before: a bearer token.
        let bearer = try await exchange(fixture, dpop: nil).get()
        #expect(bearer.tokenType == "Bearer")
        #expect(try await fixture.store.token(presented: bearer.accessToken)?.keyThumbprint == nil)
        #expect(try await fixture.server.metadata().dpopSigningAlgValuesSupported == ["ES256", "RS256", "EdDSA"])
    }

    @Test("/userinfo takes a bound token with Authorization: DPoP and a proof carrying ath, never as a bearer token")
    func userinfo() async throws {
        let fixture = try await Fixture.make()
        let tokens = try await exchange(fixture, dpop: try proof(fixture)).get()
        let token = tokens.accessToken
        func userinfo(_ authorization: String?, _ dpop: String?) async throws -> Result<UserInfo, BearerError> {
            try await fixture.server.userInfo.claims(authorization: authorization, dpop: dpop, method: "GET")
        }
        let good = try proof(fixture, method: "GET", url: userinfoURL, accessToken: token)
        #expect(try await userinfo("DPoP " + token, good).get().sub == fixture.alice.id.rawValue)
        // The same proof again: a replay.
        guard case .failure(.invalidDPoPProof) = try await userinfo("DPoP " + token, good) else {
            Issue.record("a replayed proof was accepted")
            return
        }
        // The bound token as a bearer token, or without a proof, or with a proof by another key.
        #expect(try await userinfo("Bearer " + token, nil).failure == .invalidToken)
        guard case .failure(.invalidDPoPProof) = try await userinfo("DPoP " + token, nil) else {
            Issue.record("no proof was accepted")
            return
        }
        let stolen = try proof(fixture, key: P256.Signing.PrivateKey(), method: "GET", url: userinfoURL, accessToken: token)
        guard case .failure(.invalidDPoPProof(let why)) = try await userinfo("DPoP " + token, stolen) else {
            Issue.record("a proof by another key was accepted")
            return
        }
        #expect(why.contains("another key"))
        // A proof for another token (no or wrong ath), another method or another URL.
        for bad in [
            try proof(fixture, method: "GET", url: userinfoURL),
            try proof(fixture, method: "GET", url: userinfoURL, accessToken: "lk_at_other"),
            try proof(fixture, method: "POST", url: userinfoURL, accessToken: token),
            try proof(fixture, method: "GET", url: tokenURL, accessToken: token),
            try proof(fixture, method: "GET", url: "https://elsewhere.example/userinfo", accessToken: token),
        ] {
            guard case .failure(.invalidDPoPProof) = try await userinfo("DPoP " + token, bad) else {
                Issue.record("a proof for another request was accepted")
                return
            }
        }
        // A bearer token sent with the DPoP scheme is not what it claims to be.
        let bearer = try await exchange(fixture, dpop: nil).get().accessToken
        let forBearer = try proof(fixture, method: "GET", url: userinfoURL, accessToken: bearer)
        #expect(try await userinfo("DPoP " + bearer, forBearer).failure == .invalidToken)
        #expect(try await userinfo("Bearer " + bearer, nil).value != nil)
    }

    @Test("A stale proof, or one for another endpoint, is refused at the token endpoint; so is a replayed one, at any instance")
    func tokenEndpointProofs() async throws {
        let fixture = try await Fixture.make()
        let stale = try DPoPProof.make(
            key: key, method: "POST", url: tokenURL, issuedAt: fixture.clock.now.addingTimeInterval(-121))
        #expect(try await exchange(fixture, dpop: stale).failure?.error.code == .invalidDPoPProof)
        let elsewhere = try proof(fixture, url: userinfoURL)
        #expect(try await exchange(fixture, dpop: elsewhere).failure?.error.code == .invalidDPoPProof)
        let once = try proof(fixture)
        #expect(try await exchange(fixture, dpop: once).value?.tokenType == "DPoP")
        #expect(try await exchange(fixture, dpop: once).failure?.error.code == .invalidDPoPProof)
        // Another instance on the same store knows the proof too.
        let other = try fixture.reopened()
        #expect(try await exchange(other, dpop: once).failure?.error.code == .invalidDPoPProof)
    }

    @Test("A public client's bound refresh token needs a proof by the same key; the new tokens stay bound")
    func publicRefresh() async throws {
        let fixture = try await Fixture.make()
        let tokens = try await exchange(fixture, dpop: try proof(fixture)).get()
        let refreshToken = try #require(tokens.refreshToken)
        #expect(await refresh(fixture, refreshToken, dpop: nil).failure?.error.code == .invalidDPoPProof)
        let other = try proof(fixture, key: P256.Signing.PrivateKey())
        #expect(await refresh(fixture, refreshToken, dpop: other).failure?.error.code == .invalidDPoPProof)
        let renewed = try await refresh(fixture, refreshToken, dpop: try proof(fixture)).get()
        #expect(renewed.tokenType == "DPoP")
        let record = try await fixture.store.token(presented: renewed.refreshToken!)
        #expect(record?.keyThumbprint == DPoPProof.thumbprint(of: key.publicKey))
    }

    @Test("A confidential client's refresh token is not bound (§5); its access tokens are, when it sends a proof")
    func confidentialRefresh() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(client: fixture.web, scope: "profile", redirectURI: "https://web.example/cb")
        let tokens = try await fixture.server.tokenEndpoint.token(
            TokenRequest(
                body: FormParameters([
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
                    ("code_verifier", Fixture.verifier.value),
                ]), authorization: fixture.webBasic, dpop: try proof(fixture))
        ).get()
        #expect(tokens.tokenType == "DPoP")
        let refreshToken = try #require(tokens.refreshToken)
        #expect(try await fixture.store.token(presented: refreshToken)?.keyThumbprint == nil)
        let plain = try await refresh(fixture, refreshToken, authorization: fixture.webBasic, dpop: nil).get()
        #expect(plain.tokenType == "Bearer")
        let bound = try await refresh(
            fixture, plain.refreshToken!, authorization: fixture.webBasic,
            dpop: try proof(fixture, key: P256.Signing.PrivateKey())
        ).get()
        #expect(bound.tokenType == "DPoP")
    }

    @Test("Client credentials with a proof: a bound token; introspection says cnf.jkt and token_type DPoP")
    func clientCredentialsAndIntrospection() async throws {
        let fixture = try await Fixture.make()
        let tokens = try await fixture.server.tokenEndpoint.token(
            TokenRequest(
                body: FormParameters([("grant_type", "client_credentials")]), authorization: fixture.serviceBasic,
                dpop: try proof(fixture))
        ).get()
        #expect(tokens.tokenType == "DPoP")
        let answer = try await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", tokens.accessToken)]), authorization: fixture.serviceBasic)
        ).get()
        #expect(answer.tokenType == "DPoP")
        #expect(answer.keyThumbprint == DPoPProof.thumbprint(of: key.publicKey))
        #expect(answer.jsonBody.contains(#""cnf":{"jkt":""# + DPoPProof.thumbprint(of: key.publicKey) + #""}"#))
    }

    @Test("With nonces on: use_dpop_nonce and a nonce, then the proof with it passes; a stale nonce is refused again")
    func nonces() async throws {
        let fixture = try await Fixture.make { $0.requireDPoPNonce = true }
        let first = try await exchange(fixture, dpop: try proof(fixture))
        let failure = try #require(first.failure)
        #expect(failure.error.code == .useDPoPNonce)
        let nonce = try #require(failure.dpopNonce)
        let tokens = try await exchange(fixture, dpop: try proof(fixture, nonce: nonce)).get()
        #expect(tokens.tokenType == "DPoP")
        // At a resource too: the nonce works there, a made-up one does not.
        let good = try proof(fixture, method: "GET", url: userinfoURL, accessToken: tokens.accessToken, nonce: nonce)
        #expect(try await fixture.server.userInfo.claims(authorization: "DPoP " + tokens.accessToken, dpop: good).value != nil)
        let madeUp = try proof(fixture, method: "GET", url: userinfoURL, accessToken: tokens.accessToken, nonce: "nope")
        guard
            case .failure(.useDPoPNonce) = try await fixture.server.userInfo.claims(
                authorization: "DPoP " + tokens.accessToken, dpop: madeUp)
        else {
            Issue.record("a made-up nonce was accepted")
            return
        }
        // Past its lifetime, the nonce is refused and a new one given.
        fixture.clock.advance(by: 601)
        let stale = await refresh(fixture, tokens.refreshToken!, dpop: try proof(fixture, nonce: nonce))
        #expect(stale.failure?.error.code == .useDPoPNonce)
        #expect(stale.failure?.dpopNonce != nil && stale.failure?.dpopNonce != nonce)
    }

    @Test("dpop_jkt (RFC 9449 §10): the code is redeemed only with a proof by that key; a malformed one is refused")
    func codeBoundByDPoPJKT() async throws {
        let fixture = try await Fixture.make()
        let thumbprint = DPoPProof.thumbprint(of: key.publicKey)
        let code = try await fixture.code(extra: [("dpop_jkt", thumbprint)])
        func redeem(_ dpop: String?) async -> Result<TokenResponse, TokenEndpointError> {
            await fixture.server.tokenEndpoint.token(
                TokenRequest(
                    body: FormParameters([
                        ("grant_type", "authorization_code"), ("code", code), ("client_id", fixture.native.id.rawValue),
                        ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_verifier", Fixture.verifier.value),
                    ]), authorization: nil, dpop: dpop))
        }
        // Without a proof, or with another key's: refused, and the code is not used up.
        #expect(await redeem(nil).failure?.error.code == .invalidDPoPProof)
        #expect(
            await redeem(try proof(fixture, key: P256.Signing.PrivateKey())).failure?.error.code == .invalidDPoPProof)
        let tokens = try await redeem(try proof(fixture)).get()
        #expect(tokens.tokenType == "DPoP")
        #expect(try await fixture.store.token(presented: tokens.accessToken)?.keyThumbprint == thumbprint)

        for malformed in ["abc", String(repeating: "A", count: 44), thumbprint + "="] {
            let step = try await fixture.server.authorization.authorize(
                FormParameters([
                    ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", "profile"),
                    ("redirect_uri", "http://127.0.0.1:5000/callback"), ("state", "s"), ("dpop_jkt", malformed),
                    ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
                ]), session: try await fixture.signedInSession())
            guard case .redirect(let location) = step else { Issue.record("\(step)"); continue }
            #expect(Fixture.parameter("error", in: location) == "invalid_request", "\(malformed)")
        }
    }
}
