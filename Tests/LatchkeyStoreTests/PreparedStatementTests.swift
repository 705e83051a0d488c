import Foundation
import LatchkeyCore
import LatchkeyServer
import Testing

@testable import LatchkeyStorePostgres

/// The token endpoint's one-statement writes run on PostgreSQL as named prepared statements only
/// if the text built for a real request is the text its shape was prepared with; a mismatch would
/// not fail (it runs unprepared), only cost the planning again, so it is checked here.
@Suite("PostgreSQL prepared statements")
struct PreparedStatementTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func token(_ hash: String, _ kind: TokenKind) -> TokenRecord {
        TokenRecord(
            hash: TokenHash(rawValue: hash), kind: kind, grantID: "0193-grant", clientID: "native-app", userID: "alice-id",
            scope: ScopeSet(["openid", "profile"]), createdAt: now, expiresAt: now.addingTimeInterval(3600),
            issuedWith: kind == .access ? "rt-2" : nil, audience: ResourceSet(["https://mcp.example/"]),
            keyThumbprint: "jkt-value", verifierDigest: "digest-" + hash)
    }

    @Test("A refresh's rotation and a code's redemption, with real values, have the text of their prepared shape")
    func shapesMatch() {
        let successors = [Self.token("at-2", .access), Self.token("rt-2", .refresh)]
        #expect(PostgresStore.rotation(hash: "rt-1", successors: successors, at: Self.now).sql == RotationOfTwo.sql)
        let grant = GrantRecord(
            id: "0193-grant", clientID: "native-app", userID: "alice-id", scope: ScopeSet(["openid"]), createdAt: Self.now,
            authTime: Self.now, resources: ResourceSet(["https://mcp.example/"]))
        let redemption = PostgresStore.redemption(codeHash: "code-1", grant: grant, tokens: successors, at: Self.now)
        #expect(redemption.sql == RedemptionOfTwo.sql)
        let withoutRefresh = PostgresStore.redemption(
            codeHash: "code-1", grant: grant, tokens: [Self.token("at-1", .access)], at: Self.now)
        #expect(withoutRefresh.sql == RedemptionOfOne.sql)
        #expect(Set(PreparedShape.allCases.map(\.sql)).count == PreparedShape.allCases.count)
    }
}
