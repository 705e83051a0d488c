import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("refresh_token grant: rotation and reuse detection")
struct RefreshTokenGrantTests {
    func tokens(_ fixture: Fixture, scope: String = "profile activity") async throws -> TokenResponse {
        try await fixture.exchange(try await fixture.code(scope: scope)).get()
    }

    @Test("T42 A refresh returns a new pair; the access tokens stay valid")
    func rotation() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let second = try await fixture.refresh(first.refreshToken!).get()
        #expect(second.refreshToken != first.refreshToken)
        #expect(second.accessToken != first.accessToken)
        #expect(second.scope == "profile activity")
        #expect(second.userID == fixture.alice.id.rawValue)
        #expect(try await fixture.isAlive(second.accessToken))
    }

    @Test("T43 Presenting a rotated-out token after its successor was used revokes the whole grant")
    func reuseRevokesGrant() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let second = try await fixture.refresh(first.refreshToken!).get()
        let third = try await fixture.refresh(second.refreshToken!).get()
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
        #expect(await fixture.refresh(third.refreshToken!).failure?.error.code == .invalidGrant)
        for token in [first, second, third] { #expect(try await !fixture.isAlive(token.accessToken)) }
    }

    @Test("Decision 3: within the grace window an unused successor is retired and the client gets a fresh pair")
    func graceWindow() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let lost = try await fixture.refresh(first.refreshToken!).get()  // response "lost" by the client
        fixture.clock.advance(by: 30)
        let retry = try await fixture.refresh(first.refreshToken!).get()
        #expect(retry.refreshToken != lost.refreshToken)
        #expect(try await !fixture.isAlive(lost.accessToken), "the retired successor's access token is revoked")
        #expect(try await fixture.isAlive(retry.accessToken))
        // The retired successor presented later is reuse: the grant dies.
        #expect(await fixture.refresh(lost.refreshToken!).failure?.error.code == .invalidGrant)
        #expect(try await !fixture.isAlive(retry.accessToken))
    }

    @Test("Decision 3: after the grace window a rotated-out token is reuse")
    func graceExpired() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let second = try await fixture.refresh(first.refreshToken!).get()
        fixture.clock.advance(by: 61)
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
        #expect(try await !fixture.isAlive(second.accessToken))
    }

    @Test("With a zero grace period rotation is strict: the old token is dead at once and revokes the grant")
    func strictRotation() async throws {
        let fixture = try await Fixture.make { $0.refreshGracePeriod = 0 }
        let first = try await tokens(fixture)
        let second = try await fixture.refresh(first.refreshToken!).get()
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
        #expect(await fixture.refresh(second.refreshToken!).failure?.error.code == .invalidGrant)
    }

    @Test("T44 Concurrent refreshes with one token never leave two live chains")
    func concurrentRefresh() async throws {
        let fixture = try await Fixture.make { $0.refreshGracePeriod = 0 }
        let first = try await tokens(fixture)
        let results = await withTaskGroup(of: TokenResponse?.self) { group in
            for _ in 0..<10 { group.addTask { await fixture.refresh(first.refreshToken!).value } }
            return await group.reduce(into: [TokenResponse]()) { if let r = $1 { $0.append(r) } }
        }
        #expect(results.count <= 1)
        var alive = 0
        for response in results where try await fixture.isAlive(response.accessToken) { alive += 1 }
        #expect(alive <= 1)
    }

    @Test("T45 A narrower scope applies to the access token; the refresh token keeps the grant")
    func narrowing() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let narrow = try await fixture.refresh(first.refreshToken!, scope: "profile").get()
        #expect(narrow.scope == "profile")
        let full = try await fixture.refresh(narrow.refreshToken!).get()
        #expect(full.scope == "profile activity")
    }

    @Test("T46 A wider scope is invalid_scope and the refresh token stays usable")
    func widening() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture, scope: "profile")
        #expect(await fixture.refresh(first.refreshToken!, scope: "profile activity").failure?.error.code == .invalidScope)
        #expect(await fixture.refresh(first.refreshToken!).value != nil)
    }

    @Test("T47 A refresh token is bound to its client, and misuse revokes nothing")
    func boundToClient() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        #expect(await fixture.refresh(first.refreshToken!, client: fixture.native2).failure?.error.code == .invalidGrant)
        #expect(try await fixture.isAlive(first.accessToken))
        #expect(await fixture.refresh(first.refreshToken!).value != nil)
    }

    @Test("T48 An expired refresh token is invalid_grant")
    func expired() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        fixture.clock.advance(by: 30 * 86_400 + 1)
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
    }

    @Test("An access token is not a refresh token")
    func wrongKind() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        #expect(await fixture.refresh(first.accessToken).failure?.error.code == .invalidGrant)
    }
}
