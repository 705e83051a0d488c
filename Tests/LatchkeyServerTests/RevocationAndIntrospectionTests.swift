import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Revocation (RFC 7009), introspection (RFC 7662), the account page, purging")
struct RevocationAndIntrospectionTests {
    func revoke(
        _ fixture: Fixture, _ token: String, client: Client? = nil, authorization: String? = nil,
        hint: String? = nil
    ) async -> Result<Void, TokenEndpointError> {
        var body = [("token", token)]
        if let hint { body.append(("token_type_hint", hint)) }
        if authorization == nil { body.append(("client_id", (client ?? fixture.native).id.rawValue)) }
        return await fixture.server.revocation.revoke(TokenRequest(body: FormParameters(body), authorization: authorization))
    }

    func introspect(_ fixture: Fixture, _ token: String, authorization: String?) async -> Result<
        IntrospectionResponse, TokenEndpointError
    > {
        await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", token)]), authorization: authorization))
    }

    func tokens(_ fixture: Fixture) async throws -> TokenResponse {
        try await fixture.exchange(try await fixture.code()).get()
    }

    @Test("T64 Revoking a refresh token ends the grant: its access tokens and itself")
    func revokeRefresh() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let second = try await fixture.refresh(first.refreshToken!).get()
        #expect(await revoke(fixture, second.refreshToken!, hint: "refresh_token").value != nil)
        #expect(try await !fixture.isAlive(first.accessToken))
        #expect(try await !fixture.isAlive(second.accessToken))
        #expect(await fixture.refresh(second.refreshToken!).failure?.error.code == .invalidGrant)
    }

    @Test("T64 T65 Revoking an access token ends that token only, whatever the hint")
    func revokeAccess() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        #expect(await revoke(fixture, first.accessToken, hint: "refresh_token").value != nil)
        #expect(try await !fixture.isAlive(first.accessToken))
        #expect(await fixture.refresh(first.refreshToken!).value != nil)
    }

    @Test("T65 Unknown tokens answer 200; a missing token is invalid_request")
    func revokeUnknown() async throws {
        let fixture = try await Fixture.make()
        #expect(await revoke(fixture, "garbage").value != nil)
        #expect(await revoke(fixture, "garbage", hint: "foo").value != nil)
        let missing = await fixture.server.revocation.revoke(
            TokenRequest(body: FormParameters([("client_id", fixture.native.id.rawValue)]), authorization: nil))
        #expect(missing.failure?.error.code == .invalidRequest)
    }

    @Test("T66 A client cannot revoke another's token, and a confidential one must authenticate")
    func revokeOthers() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        #expect(await revoke(fixture, first.refreshToken!, client: fixture.native2).value != nil, "answers as for unknown")
        #expect(await revoke(fixture, first.accessToken, authorization: fixture.webBasic).value != nil)
        #expect(try await fixture.isAlive(first.accessToken))
        #expect(await fixture.refresh(first.refreshToken!).value != nil)
        let unauthenticated = await revoke(fixture, first.accessToken, client: fixture.web)
        #expect(unauthenticated.failure?.error.code == .invalidClient)
        let wrong = await revoke(
            fixture, first.accessToken, authorization: "Basic " + Data("\(fixture.web.id):x".utf8).base64EncodedString())
        #expect(wrong.failure?.error.code == .invalidClient)
    }

    @Test("T67 Introspection: active tokens described, inactive ones exactly {\"active\":false}")
    func introspection() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let active = try await introspect(fixture, first.accessToken, authorization: fixture.serviceBasic).get()
        #expect(active.active && active.clientID == fixture.native.id.rawValue && active.userID == fixture.alice.id.rawValue)
        #expect(active.scope == "profile activity" && active.tokenType == "Bearer")
        #expect(active.expiresAt == fixture.clock.now.addingTimeInterval(28_800))
        #expect(
            active.jsonBody.contains(#""sub":""#) && active.jsonBody.contains(#""exp":"#) && active.jsonBody.contains(#""iat":"#))
        // RV5: a refresh token is nobody's access token: inactive to every client but its own.
        for caller in [fixture.webBasic, fixture.serviceBasic] {
            #expect(try await introspect(fixture, first.refreshToken!, authorization: caller).get() == .inactive)
        }

        _ = await revoke(fixture, first.accessToken)
        for token in [first.accessToken, "garbage"] {
            let inactive = try await introspect(fixture, token, authorization: fixture.serviceBasic).get()
            #expect(inactive.jsonBody == #"{"active":false}"#)
        }
        fixture.clock.advance(by: 31 * 86_400)
        #expect(try await introspect(fixture, first.refreshToken!, authorization: fixture.serviceBasic).get() == .inactive)
    }

    @Test("RV5 RV6 A client sees its own refresh token, without token_type; a personal app sees no one else's tokens")
    func introspectionAudience() async throws {
        let fixture = try await Fixture.make()
        // A confidential app's own tokens.
        let code = try await fixture.code(client: fixture.web, redirectURI: "https://web.example/cb")
        let own = try await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: fixture.webBasic
        ).get()
        let refresh = try await introspect(fixture, own.refreshToken!, authorization: fixture.webBasic).get()
        #expect(refresh.active && refresh.tokenType == nil && !refresh.jsonBody.contains("token_type"))
        #expect(try await introspect(fixture, own.accessToken, authorization: fixture.webBasic).get().tokenType == "Bearer")

        // A confidential app any user could make for themselves learns nothing of others' tokens...
        let personal = try await fixture.admin.registerClient(
            type: .web, name: "Bob's scanner", redirectURIs: ["https://bob.example/cb"], scopes: ["profile"],
            ownerUsername: "bob")
        let personalBasic = "Basic " + Data("\(personal.client.id):\(personal.secret!)".utf8).base64EncodedString()
        let others = try await tokens(fixture)
        #expect(try await introspect(fixture, others.accessToken, authorization: personalBasic).get() == .inactive)
        #expect(try await introspect(fixture, own.accessToken, authorization: personalBasic).get() == .inactive)
        // ...while the resource server an administrator registered does.
        #expect(try await introspect(fixture, others.accessToken, authorization: fixture.serviceBasic).get().active)
    }

    @Test("AD7 RV2 A disabled user's tokens stop at every endpoint: introspection, /userinfo, refresh")
    func grantEndedTokens() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        // Disabling the user ends the tokens' life even where their rows say nothing.
        try await fixture.admin.setDisabled(username: "alice", true)
        #expect(try await !fixture.isAlive(first.accessToken))
        #expect(try await introspect(fixture, first.accessToken, authorization: fixture.serviceBasic).get() == .inactive)
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
        let userinfo = try await fixture.server.userInfo.claims(authorization: "Bearer " + first.accessToken)
        #expect(userinfo.failure == .invalidToken)
    }

    @Test("T67 Introspection needs a confidential client's credentials")
    func introspectionAuthentication() async throws {
        let fixture = try await Fixture.make()
        let first = try await tokens(fixture)
        let anonymous = await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", first.accessToken)]), authorization: nil))
        #expect(anonymous.failure?.error.code == .invalidClient)
        let publicClient = await fixture.server.introspection.introspect(
            TokenRequest(
                body: FormParameters([("token", first.accessToken), ("client_id", fixture.native.id.rawValue)]),
                authorization: nil))
        #expect(publicClient.failure?.error.code == .invalidClient)
        let wrong = await introspect(
            fixture, first.accessToken, authorization: "Basic " + Data("\(fixture.service.id):x".utf8).base64EncodedString())
        #expect(wrong.failure?.error.code == .invalidClient)
    }

    @Test("Disconnecting an app on the account page ends its grants and forgets the consent")
    func disconnect() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        let first = try await fixture.exchange(try await fixture.code(session: session)).get()
        let apps = try await fixture.server.account.connectedApps(userID: fixture.alice.id)
        #expect(apps.map(\.client.id) == [fixture.native.id])
        #expect(apps.first?.scope == ScopeSet(["profile", "activity"]))
        let forged = try await fixture.server.account.disconnect(
            FormParameters([("csrf_token", "x"), ("client_id", fixture.native.id.rawValue)]), session: session)
        #expect(!forged)
        #expect(try await fixture.isAlive(first.accessToken))
        #expect(
            try await fixture.server.account.disconnect(
                FormParameters([("csrf_token", session.csrfToken), ("client_id", fixture.native.id.rawValue)]), session: session))
        #expect(try await !fixture.isAlive(first.accessToken))
        #expect(await fixture.refresh(first.refreshToken!).failure?.error.code == .invalidGrant)
        #expect(try await fixture.server.account.connectedApps(userID: fixture.alice.id).isEmpty)
        #expect(
            try await fixture.store.consent(
                userID: fixture.alice.id, clientID: fixture.native.id) == nil)
    }

    @Test("Purging deletes what expired and keeps what still matters")
    func purge() async throws {
        let fixture = try await Fixture.make()
        let oldSession = try await fixture.signedInSession()
        let used = try await fixture.code()
        let first = try await fixture.exchange(used).get()
        let unused = try await fixture.code()
        fixture.clock.advance(by: 9 * 3_600)  // access token expired an hour ago; refresh token alive
        let live = try await fixture.signedInSession()
        #expect(try await fixture.server.purgeExpired() >= 2)
        #expect(try await fixture.store.token(presented: first.accessToken) == nil)
        #expect(try await fixture.store.authorizationCode(presented: unused) == nil)
        #expect(try await fixture.store.token(presented: first.refreshToken!) != nil)
        #expect(try await fixture.store.session(idHash: live.idHash) != nil)
        fixture.clock.advance(by: 4 * 3_600)
        _ = try await fixture.server.purgeExpired()
        #expect(try await fixture.store.session(idHash: oldSession.idHash) == nil)
        #expect(await fixture.refresh(first.refreshToken!).value != nil)
    }

    @Test("T68 Metadata lists revocation, introspection and client_credentials; token only with an implicit client")
    func metadata() async throws {
        let fixture = try await Fixture.make()
        let metadata = try await fixture.server.metadata()
        #expect(metadata.revocationEndpoint == Fixture.issuer + "/oauth2/revoke")
        #expect(metadata.introspectionEndpoint == Fixture.issuer + "/oauth2/introspect")
        #expect(metadata.grantTypesSupported.contains("client_credentials"))
        #expect(metadata.responseTypesSupported == ["code", "token"])
        _ = try await fixture.store.deleteClient(id: fixture.spa.id)
        #expect(try await fixture.server.metadata().responseTypesSupported == ["code"])
    }
}
