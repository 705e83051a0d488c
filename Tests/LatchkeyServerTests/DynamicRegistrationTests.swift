import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Dynamic client registration (RFC 7591) and its management (RFC 7592)")
struct DynamicRegistrationTests {
    func fixture(_ mode: DynamicRegistrationPolicy.Mode, perAddress: Int = 20) async throws -> Fixture {
        try await Fixture.make {
            $0.dynamicRegistration.mode = mode
            $0.dynamicRegistration.registrationsPerAddress = perAddress
        }
    }

    func register(_ fixture: Fixture, _ json: String, token: String? = nil, from address: String = "192.0.2.7") async throws
        -> (status: Int, object: [String: Any])
    {
        let answer = try await fixture.server.registration.register(
            Array(json.utf8), authorization: token.map { "Bearer " + $0 }, clientAddress: address)
        let object = answer.json.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        return (answer.status, object)
    }

    static let native =
        #"{"client_name":"Agent","redirect_uris":["http://127.0.0.1:33418/callback"],"scope":"activity","application_type":"native","token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"software_id":"ignored"}"#

    @Test("RG1 Off by default: 403 and no registration_endpoint in the metadata")
    func off() async throws {
        let fixture = try await Fixture.make()
        #expect(try await register(fixture, Self.native).status == 403)
        #expect(try await fixture.server.metadata().registrationEndpoint == nil)
    }

    @Test("RG2 Open registration takes a native app with a loopback redirect, which then signs in like any other")
    func openNative() async throws {
        let fixture = try await fixture(.open)
        #expect(try await fixture.server.metadata().registrationEndpoint == Fixture.issuer + "/oauth2/register")
        let (status, object) = try await register(fixture, Self.native)
        #expect(status == 201)
        let clientID = try #require(object["client_id"] as? String)
        #expect(object["token_endpoint_auth_method"] as? String == "none" && object["client_secret"] == nil)
        #expect((object["registration_access_token"] as? String)?.hasPrefix("lk_ra_") == true)
        #expect(object["registration_client_uri"] as? String == Fixture.issuer + "/oauth2/register/" + clientID)
        #expect(object["scope"] as? String == "activity" && object["software_id"] == nil)
        let client = try #require(try await fixture.store.client(id: ClientID(rawValue: clientID)))
        #expect(client.type == .native && client.registration == .dynamic && client.registration.isSelfAsserted)
        let tokens = try await fixture.exchange(
            try await fixture.code(client: client, scope: "activity", redirectURI: "http://127.0.0.1:5000/callback"),
            client: client, redirectURI: "http://127.0.0.1:5000/callback"
        ).get()
        #expect(tokens.scope == "activity")
        // A registration that names no scope gets openid and what the registered resources accept.
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: "https://mcp.example/mcp", name: "MCP", scopes: ["sleep"]))
        let plain = try await register(fixture, #"{"redirect_uris":["com.example.agent:/cb"]}"#)
        #expect(plain.status == 201 && plain.object["scope"] as? String == "openid sleep")
        #expect(plain.object["client_name"] as? String == "Unnamed app")
        // http://localhost stays on the device too (what many MCP clients register).
        let localhost = try await register(fixture, #"{"redirect_uris":["http://localhost:3334/callback"]}"#)
        #expect(localhost.status == 201)
    }

    @Test(
        "RG3 Open registration refuses web redirects, secrets, other grants, the admin scope and bad JSON, in RFC 7591 §3.2.2 terms",
        arguments: [
            (#"{"redirect_uris":["https://evil.example/cb"]}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":["http://localhost.evil.example:1234/cb"]}"#, "invalid_redirect_uri"),
            (
                #"{"redirect_uris":["http://127.0.0.1/cb"],"post_logout_redirect_uris":["https://evil.example/x"]}"#,
                "invalid_client_metadata"
            ),
            (
                #"{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"client_secret_basic","application_type":"web"}"#,
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["client_credentials"]}"#, "invalid_client_metadata"),
            (
                #"{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["implicit"],"response_types":["token"]}"#,
                "invalid_client_metadata"
            ),
            (#"{"redirect_uris":["http://127.0.0.1/cb"],"scope":"latchkey:admin"}"#, "invalid_client_metadata"),
            (#"{"redirect_uris":["http://127.0.0.1/cb"],"scope":"no-such-scope"}"#, "invalid_client_metadata"),
            (#"{"redirect_uris":["http://127.0.0.1/cb"],"jwks_uri":"https://a.example/jwks"}"#, "invalid_client_metadata"),
            (#"{"redirect_uris":"http://127.0.0.1/cb"}"#, "invalid_redirect_uri"),
            (#"{"redirect_uris":[]}"#, "invalid_redirect_uri"),
            (#"[1,2]"#, "invalid_client_metadata"),
        ])
    func openRefusals(json: String, error: String) async throws {
        let fixture = try await fixture(.open)
        let (status, object) = try await register(fixture, json)
        #expect(status == 400 && object["error"] as? String == error, "\(object)")
        #expect(try await fixture.store.clients().allSatisfy { $0.registration == .administrator })
    }

    @Test("RG4 The registration access token reads, updates and deletes its own registration, and nothing else")
    func management() async throws {
        let fixture = try await fixture(.open)
        let first = try await register(fixture, Self.native).object
        let second = try await register(fixture, Self.native).object
        let id = try #require(first["client_id"] as? String)
        let token = "Bearer " + (try #require(first["registration_access_token"] as? String))
        let otherToken = "Bearer " + (try #require(second["registration_access_token"] as? String))
        #expect(try await fixture.server.registration.readRegistration(clientID: id, authorization: token).status == 200)
        for authorization in [otherToken, nil, "Bearer lk_ra_wrong", token.uppercased()] {
            let answer = try await fixture.server.registration.readRegistration(clientID: id, authorization: authorization)
            #expect(answer.status == 401 && answer.wwwAuthenticate?.contains("invalid_token") == true)
        }
        // An administrator's client cannot be reached this way whatever the token.
        #expect(
            try await fixture.server.registration.readRegistration(clientID: fixture.native.id.rawValue, authorization: token)
                .status == 401)

        let update =
            #"{"client_id":"\#(id)","client_name":"Agent 2","redirect_uris":["http://127.0.0.1/cb"],"scope":"activity sleep"}"#
        let updated = try await fixture.server.registration.updateRegistration(
            clientID: id, Array(update.utf8), authorization: token)
        #expect(updated.status == 200 && updated.json?.contains(#""client_name":"Agent 2""#) == true)
        #expect(try await fixture.store.client(id: ClientID(rawValue: id))?.scopes == ScopeSet(["activity", "sleep"]))
        for bad in [
            #"{"client_id":"other","redirect_uris":["http://127.0.0.1/cb"]}"#,
            #"{"client_id":"\#(id)","redirect_uris":["http://127.0.0.1/cb"],"registration_access_token":"x"}"#,
            #"{"client_id":"\#(id)","redirect_uris":["https://evil.example/cb"]}"#,
            #"{"client_id":"\#(id)","redirect_uris":["http://127.0.0.1/cb"],"client_secret":"guess"}"#,
        ] {
            #expect(
                try await fixture.server.registration.updateRegistration(clientID: id, Array(bad.utf8), authorization: token)
                    .status == 400)
        }
        // What an administrator set stays through the app's own update.
        var settings = ClientSettings(
            try #require(try await fixture.store.client(id: ClientID(rawValue: id))), ownerUsername: "alice")
        settings.consentMarkdown = "Checked by the IT team."
        _ = try await fixture.admin.updateClient(id: id, settings)
        #expect(
            try await fixture.server.registration.updateRegistration(clientID: id, Array(update.utf8), authorization: token)
                .status == 200)
        let kept = try #require(try await fixture.store.client(id: ClientID(rawValue: id)))
        #expect(kept.ownerUserID == fixture.alice.id && kept.consentMarkdown == "Checked by the IT team.")
        #expect(try await fixture.server.registration.deleteRegistration(clientID: id, authorization: token).status == 204)
        #expect(try await fixture.store.client(id: ClientID(rawValue: id)) == nil)
        #expect(try await fixture.server.registration.readRegistration(clientID: id, authorization: token).status == 401)
    }

    @Test("RG5 With initial-access-token, registration needs a live token and may register a web app with a secret")
    func initialAccessToken() async throws {
        let fixture = try await fixture(.initialAccessToken)
        let web = #"{"client_name":"Site","redirect_uris":["https://site.example/cb"],"application_type":"web"}"#
        #expect(try await register(fixture, web).status == 401)
        #expect(try await register(fixture, web, token: "lk_ia_made-up").status == 401)
        let made = try await fixture.admin.createInitialAccessToken(lifetime: 600)
        let (status, object) = try await register(fixture, web, token: made.token)
        #expect(status == 201 && object["token_endpoint_auth_method"] as? String == "client_secret_basic")
        #expect(
            (object["client_secret"] as? String)?.hasPrefix("lk_cs_") == true && object["client_secret_expires_at"] as? Int == 0)
        fixture.clock.advance(by: 601)
        #expect(try await register(fixture, web, token: made.token).status == 401)
        let again = try await fixture.admin.createInitialAccessToken(lifetime: 600)
        try await fixture.admin.deleteInitialAccessToken(id: again.record.id)
        #expect(try await register(fixture, web, token: again.token).status == 401)
    }

    @Test("RG6 Registrations are throttled per client address")
    func throttled() async throws {
        let fixture = try await fixture(.open, perAddress: 2)
        #expect(try await register(fixture, Self.native).status == 201)
        #expect(try await register(fixture, Self.native).status == 201)
        let third = try await fixture.server.registration.register(
            Array(Self.native.utf8), authorization: nil, clientAddress: "192.0.2.7")
        #expect(third.status == 429 && (third.retryAfter ?? 0) > 0)
        #expect(try await register(fixture, Self.native, from: "192.0.2.8").status == 201)
    }

    @Test("RG7 A self-registered app nobody used is purged after the retention; a used one and an administrator's stay")
    func purgeUnused() async throws {
        let fixture = try await fixture(.open)
        let unused = try #require(try await register(fixture, Self.native).object["client_id"] as? String)
        let used = try #require(try await register(fixture, Self.native).object["client_id"] as? String)
        let usedClient = try #require(try await fixture.store.client(id: ClientID(rawValue: used)))
        _ = try await fixture.code(client: usedClient, scope: "activity", redirectURI: "http://127.0.0.1:5000/callback")
        fixture.clock.advance(by: ExpiryPurge.defaultUnusedRegistrationRetention + 60)
        _ = try await fixture.server.purgeExpired()
        #expect(try await fixture.store.client(id: ClientID(rawValue: unused)) == nil)
        #expect(try await fixture.store.client(id: ClientID(rawValue: used)) != nil)
        #expect(try await fixture.store.client(id: fixture.native.id) != nil)
    }
}
