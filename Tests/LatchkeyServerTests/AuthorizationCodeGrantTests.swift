import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("authorization_code grant")
struct AuthorizationCodeGrantTests {
    @Test("A code exchanges once for the docs/design.md §2 token response")
    func exchange() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let response = try await fixture.exchange(code).get()
        #expect(response.accessToken.hasPrefix("lk_at_"))
        #expect(response.refreshToken?.hasPrefix("lk_rt_") == true)
        #expect(response.tokenType == "Bearer")
        #expect(response.expiresIn == 28_800)
        #expect(response.scope == "profile activity")
        #expect(response.userID == fixture.alice.id.rawValue)
        #expect(try await fixture.isAlive(response.accessToken))
    }

    @Test("Tokens and codes are stored only as SHA-256 hashes")
    func storedHashed() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let response = try await fixture.exchange(code).get()
        let file = try Data(contentsOf: fixture.directory.appendingPathComponent("latchkey.sqlite"))
        let wal = (try? Data(contentsOf: fixture.directory.appendingPathComponent("latchkey.sqlite-wal"))) ?? Data()
        for secret in [code, response.accessToken, response.refreshToken!, fixture.webSecret] {
            #expect(file.range(of: Data(secret.utf8)) == nil && wal.range(of: Data(secret.utf8)) == nil)
        }
        #expect(try await fixture.store.token(presented: response.accessToken) != nil)
    }

    @Test("T09 A replayed code is invalid_grant and revokes the tokens it issued")
    func replayRevokes() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let first = try await fixture.exchange(code).get()
        fixture.clock.advance(by: 1)
        #expect(await fixture.exchange(code).failure?.error.code == .invalidGrant)
        #expect(try await !fixture.isAlive(first.accessToken))
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
    }

    @Test("T09 Replay detection still works after the code's lifetime")
    func replayAfterExpiry() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let first = try await fixture.exchange(code).get()
        fixture.clock.advance(by: 120)
        #expect(await fixture.exchange(code).failure?.error.code == .invalidGrant)
        #expect(try await !fixture.isAlive(first.accessToken))
    }

    @Test("T11 T13 A used code presented by another client, or with a wrong verifier, revokes nothing")
    func replayFromOtherClient() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let first = try await fixture.exchange(code).get()
        #expect(await fixture.exchange(code, client: fixture.native2).failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code, verifier: String(repeating: "x", count: 43)).failure?.error.code == .invalidGrant)
        #expect(try await fixture.isAlive(first.accessToken))
    }

    @Test("T13 A code issued to one client cannot be redeemed by another")
    func boundToClient() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        #expect(await fixture.exchange(code, client: fixture.native2).failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code).value != nil, "the rightful client can still redeem it")
    }

    @Test("T04 T05 A missing or wrong verifier is invalid_grant and does not burn the code")
    func wrongVerifier() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        #expect(await fixture.exchange(code, verifier: nil).failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code, verifier: String(repeating: "y", count: 43)).failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code).value != nil)
    }

    @Test(
        "T06 Verifiers outside 43*128unreserved are invalid_grant",
        arguments: [
            String(repeating: "a", count: 42), String(repeating: "a", count: 129), String(repeating: "a", count: 42) + "$",
            String(repeating: "a", count: 42) + " ", String(repeating: "a", count: 42) + "é",
            String(repeating: "a", count: 42) + "\u{0}",
        ])
    func verifierGrammar(verifier: String) async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        #expect(await fixture.exchange(code, verifier: verifier).failure?.error.code == .invalidGrant)
    }

    @Test("T06 Verifiers of exactly 43 and 128 characters with -._~ work")
    func verifierBounds() async throws {
        let fixture = try await Fixture.make()
        for verifier in [String(repeating: "-._~", count: 10) + "abc", String(repeating: "Az9~", count: 32)] {
            let parsed = try #require(CodeVerifier(verifier))
            let code = try await fixture.code(verifier: parsed)
            #expect(await fixture.exchange(code, verifier: verifier).value != nil)
        }
    }

    @Test("T14 redirect_uri at the token endpoint: required iff sent to /authorize, and identical")
    func redirectURIRule() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        #expect(await fixture.exchange(code, redirectURI: nil).failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code, redirectURI: "http://127.0.0.1:5000/callback/").failure?.error.code == .invalidGrant)
        #expect(await fixture.exchange(code).value != nil)

        // Omitted at /authorize (one registered): omitted or the registered value is fine, another is not.
        let omitted = try await fixture.code(client: fixture.native2, scope: "profile", redirectURI: nil)
        #expect(await fixture.exchange(omitted, client: fixture.native2, redirectURI: "com.example.other:/cb2").failure != nil)
        #expect(await fixture.exchange(omitted, client: fixture.native2, redirectURI: "com.example.other:/cb").value != nil)
        let omittedAgain = try await fixture.code(client: fixture.native2, scope: "profile", redirectURI: nil)
        #expect(await fixture.exchange(omittedAgain, client: fixture.native2, redirectURI: nil).value != nil)
    }

    @Test("T12 A code lives 60 seconds")
    func expiry() async throws {
        let fixture = try await Fixture.make()
        let late = try await fixture.code()
        let onTime = try await fixture.code()
        fixture.clock.advance(by: 59)
        #expect(await fixture.exchange(onTime).value != nil)
        fixture.clock.advance(by: 2)
        #expect(await fixture.exchange(late).failure?.error.code == .invalidGrant)
    }

    @Test("T08 A verifier for a code issued without a challenge is invalid_grant (PKCE downgrade)")
    func downgrade() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(
            client: fixture.web, scope: "profile", redirectURI: "https://web.example/cb", verifier: nil)
        let withVerifier = await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: fixture.webBasic)
        #expect(withVerifier.failure?.error.code == .invalidGrant)
        let plain = await fixture.token(
            [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb")],
            authorization: fixture.webBasic)
        #expect(plain.value != nil)
    }

    @Test("ST1 A real selector with a forged verifier finds nothing: codes, access and refresh tokens; the real ones still work")
    func forgedVerifiers() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        // Same prefix and selector, another verifier: the row is found and its verifier refused.
        func forged(_ value: String) -> String { String(value.prefix(22)) + RandomToken.randomBase64URL(byteCount: 32) }
        #expect(await fixture.exchange(forged(code)).failure?.error.code == .invalidGrant)
        #expect(try await fixture.store.authorizationCode(presented: forged(code)) == nil)
        #expect(try await fixture.store.authorizationCode(presented: code) != nil)
        let tokens = try await fixture.exchange(code).get()
        let refresh = try #require(tokens.refreshToken)
        #expect(!(try await fixture.isAlive(forged(tokens.accessToken))))
        #expect(await fixture.refresh(forged(refresh)).failure?.error.code == .invalidGrant)
        // The selector alone, or with the verifier of another token, is no better.
        #expect(!(try await fixture.isAlive(String(tokens.accessToken.prefix(22)))))
        #expect(!(try await fixture.isAlive(String(tokens.accessToken.prefix(22)) + refresh.suffix(43))))
        // A whole-token lookup of a split token's value finds nothing either: its hash keys no row.
        #expect(try await fixture.store.token(hash: TokenHash(of: tokens.accessToken)) == nil)
        #expect(try await fixture.isAlive(tokens.accessToken))
        #expect(await fixture.refresh(refresh).value != nil, "the forgeries did not rotate or revoke the real token")
    }

    @Test("T15 T31 Unknown, empty and repeated codes")
    func malformedCodes() async throws {
        let fixture = try await Fixture.make()
        let unknown = await fixture.exchange("lk_ac_" + RandomToken.randomBase64URL(byteCount: 32))
        #expect(unknown.failure?.error.code == .invalidGrant)
        let empty = await fixture.token([
            ("grant_type", "authorization_code"), ("code", ""), ("client_id", fixture.native.id.rawValue),
        ])
        #expect(empty.failure?.error.code == .invalidRequest)
        let code = try await fixture.code()
        let repeated = await fixture.token([
            ("grant_type", "authorization_code"), ("code", code), ("code", "other"), ("client_id", fixture.native.id.rawValue),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_verifier", Fixture.verifier.value),
        ])
        #expect(repeated.failure?.error.code == .invalidRequest)
        #expect(await fixture.exchange(code).value != nil, "a refused duplicate does not consume the code")
    }

    @Test("T10 Of many concurrent redemptions of one code exactly one succeeds")
    func concurrentRedemption() async throws {
        let fixture = try await Fixture.make()
        for _ in 0..<5 {
            let code = try await fixture.code()
            let successes = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 { group.addTask { await fixture.exchange(code).value != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(successes == 1)
        }
    }

    @Test("T56 An unknown or unimplemented grant_type is unsupported_grant_type")
    func unsupportedGrant() async throws {
        let fixture = try await Fixture.make()
        for grant in ["password", "foo"] {
            let result = await fixture.token([("grant_type", grant), ("client_id", fixture.native.id.rawValue)])
            #expect(result.failure?.error.code == .unsupportedGrantType)
        }
        #expect(await fixture.token([("client_id", fixture.native.id.rawValue)]).failure?.error.code == .invalidRequest)
    }
}
