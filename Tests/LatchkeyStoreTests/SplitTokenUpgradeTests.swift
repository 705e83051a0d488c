import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer
import LatchkeyStoreSQLite
import LatchkeyTestSupport
import Testing

/// Upgrading a store that holds codes and tokens issued before split tokens (docs/design.md §6).
@Suite("Split tokens: the upgrade")
struct SplitTokenUpgradeTests {
    @Test("ST2 A store at step 14 holding live whole tokens and an unused code: after the upgrade they all still work")
    func oldTokensSurviveTheUpgrade() async throws {
        let fixture = try await Fixture.make()
        let issued = try await fixture.exchange(try await fixture.code()).get()
        let unused = try await fixture.code()
        // Turn the rows the server just wrote into what the release before split tokens wrote: keyed
        // by the SHA-256 of a whole token (prefix and 43 characters), no verifier column, step 15
        // not yet applied.
        let old = (
            access: RandomToken.generate(.accessToken), refresh: RandomToken.generate(.refreshToken),
            code: RandomToken.generate(.authorizationCode)
        )
        let selector = { (value: String) in try #require(SplitToken(parsing: value)).selector }
        let (accessSelector, refreshSelector, codeSelector) = (
            try selector(issued.accessToken), try selector(issued.refreshToken!), try selector(unused)
        )
        let path = fixture.directory.appendingPathComponent("latchkey.sqlite").path
        try await DatabaseQueue(path: path).write { db in
            for (value, key) in [(old.access, accessSelector), (old.refresh, refreshSelector)] {
                try db.execute(
                    sql: "UPDATE tokens SET hash = ?, verifier = NULL WHERE hash = ?", arguments: [RandomToken.hash(value), key])
            }
            try db.execute(
                sql: "UPDATE tokens SET issued_with = ? WHERE issued_with = ?",
                arguments: [RandomToken.hash(old.refresh), refreshSelector])
            try db.execute(
                sql: "UPDATE authorization_codes SET code_hash = ?, verifier = NULL WHERE code_hash = ?",
                arguments: [RandomToken.hash(old.code), codeSelector])
            try db.execute(sql: "ALTER TABLE tokens DROP COLUMN verifier")
            try db.execute(sql: "ALTER TABLE authorization_codes DROP COLUMN verifier")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = '0015_split_tokens'")
        }

        let upgraded = try fixture.reopened()
        #expect(try await upgraded.store.appliedSchemaSteps() == SchemaMigration.all.count)
        #expect(try await upgraded.isAlive(old.access), "the old access token still reads /userinfo")
        let introspected = try await upgraded.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", old.access)]), authorization: upgraded.serviceBasic)
        ).get()
        #expect(introspected.active)

        let fromCode = try await upgraded.exchange(old.code).get()
        #expect(SplitToken(parsing: fromCode.accessToken) != nil && SplitToken(parsing: fromCode.refreshToken!) != nil)
        #expect(try await upgraded.isAlive(fromCode.accessToken))
        #expect(await upgraded.exchange(old.code).failure?.error.code == .invalidGrant, "the old code is still single-use")

        let rotated = try await upgraded.refresh(old.refresh).get()
        #expect(SplitToken(parsing: rotated.refreshToken!) != nil, "the successor of an old refresh token is split")
        let next = try await upgraded.refresh(rotated.refreshToken!).get()
        upgraded.clock.advance(by: 120)
        #expect(await upgraded.refresh(old.refresh).failure?.error.code == .invalidGrant)
        #expect(!(try await upgraded.isAlive(next.accessToken)), "reusing the old refresh token revoked its grant")
    }
}

extension StoreConformanceTests {
    @Test("ST1 Split tokens: a code and a token are found by selector with the right verifier only", arguments: TestStores.kinds)
    func splitTokens(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let issuedAt = Self.t0
        let (access, code, whole) = (
            SplitToken.generate(.accessToken, issuedAt: issuedAt), SplitToken.generate(.authorizationCode, issuedAt: issuedAt),
            RandomToken.generate(.accessToken)
        )
        let grant = GrantRecord(id: "g-split", clientID: "c1", userID: nil, scope: ScopeSet(["profile"]), createdAt: issuedAt)
        let split = TokenRecord(
            hash: TokenHash(issued: access), kind: .access, grantID: grant.id, clientID: "c1", userID: nil,
            scope: ScopeSet(["profile"]), createdAt: issuedAt, expiresAt: issuedAt.addingTimeInterval(60),
            verifierDigest: access.verifierDigest)
        var older = split
        older.hash = TokenHash(of: whole)
        older.verifierDigest = nil
        try await store.insertGrant(grant, tokens: [split, older])
        try await store.insertAuthorizationCode(
            AuthorizationCodeRecord(
                codeHash: CodeHash(issued: code), clientID: "c1", userID: "u1", redirectURI: "https://a.example/cb",
                redirectURIParameter: nil, scope: ScopeSet(["profile"]), codeChallenge: nil, createdAt: issuedAt,
                expiresAt: issuedAt.addingTimeInterval(60), verifierDigest: code.verifierDigest))

        #expect(try await store.token(presented: access.value) == split)
        #expect(try await store.token(presented: whole) == older)
        #expect(try await store.authorizationCode(presented: code.value)?.verifierDigest == code.verifierDigest)
        let forged = { (value: String) in String(value.prefix(22)) + RandomToken.randomBase64URL(byteCount: 32) }
        #expect(try await store.token(presented: forged(access.value)) == nil)
        #expect(try await store.authorizationCode(presented: forged(code.value)) == nil)
        // The store hands back the row's digest with it: what PresentedSecret checks the verifier against.
        #expect(try await store.token(hash: split.hash)?.verifierDigest == access.verifierDigest)
    }
}
