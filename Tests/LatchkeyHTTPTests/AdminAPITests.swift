import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The admin API over real HTTP: who may call it, each resource, and bad input.
@Suite("Admin API")
struct AdminAPITests {
    /// A service client with the admin scope, and a token it got by client credentials.
    func adminToken(_ fixture: Fixture, _ browser: Browser) async throws -> (client: Client, headers: HTTPFields) {
        let automation = try await fixture.admin.registerClient(
            type: .service, name: "Automation", redirectURIs: [], scopes: [adminAPIScope])
        let basic = "Basic " + Data("\(automation.client.id):\(automation.secret!)".utf8).base64EncodedString()
        let token = try await browser.post(
            "/oauth2/token", form: [("grant_type", "client_credentials"), ("scope", adminAPIScope)],
            headers: [.authorization: basic])
        let access = try #require(token.jsonObject["access_token"] as? String)
        return (automation.client, [.authorization: "Bearer " + access])
    }

    @Test("AD5 Only a service client's own latchkey:admin token opens the API; others get RFC 6750 errors")
    func authentication() async throws {
        try await withLiveServer { fixture, browser in
            let missing = try await browser.send(.get, "/admin/api/clients")
            #expect(missing.status == .unauthorized && missing.headers[.wwwAuthenticate] == "Bearer realm=\"latchkey\"")
            let bogus = try await browser.send(.get, "/admin/api/clients", headers: [.authorization: "Bearer lk_at_nope"])
            #expect(bogus.status == .unauthorized && bogus.headers[.wwwAuthenticate]?.contains("invalid_token") == true)

            // A service token without the scope.
            let plain = try await browser.post(
                "/oauth2/token", form: [("grant_type", "client_credentials")], headers: [.authorization: fixture.serviceBasic])
            let plainToken = try #require(plain.jsonObject["access_token"] as? String)
            let noScope = try await browser.send(.get, "/admin/api/users", headers: [.authorization: "Bearer " + plainToken])
            #expect(noScope.status == .forbidden && noScope.headers[.wwwAuthenticate]?.contains("insufficient_scope") == true)

            // Registration refuses the admin scope to any app a person signs in to...
            await #expect(throws: AdministrationError.self) {
                try await fixture.admin.registerClient(
                    type: .native, name: "Sneaky", redirectURIs: ["http://127.0.0.1/callback"],
                    scopes: ["profile", adminAPIScope])
            }
            // ...and should such an app exist all the same (written to the store directly), a person's grant
            // is still not an admin credential.
            var sneaky = fixture.native
            sneaky.id = "SneakyNativeApp1"
            sneaky.scopes = ScopeSet(["profile", adminAPIScope])
            try await fixture.store.insertClient(sneaky)
            let code = try await fixture.code(client: sneaky, scope: "profile " + adminAPIScope)
            let tokens = try await fixture.exchange(code, client: sneaky).get()
            #expect(tokens.scope.contains(adminAPIScope))
            let delegated = try await browser.send(
                .get, "/admin/api/users", headers: [.authorization: "Bearer " + tokens.accessToken])
            #expect(delegated.status == .forbidden)

            let (_, headers) = try await adminToken(fixture, browser)
            #expect(try await browser.send(.get, "/admin/api/users", headers: headers).status == .ok)
        }
    }

    @Test("Clients: create in RFC 7591 names with the secret once, read, replace, delete; audit names the caller")
    func clients() async throws {
        try await withLiveServer { fixture, browser in
            let (_, headers) = try await adminToken(fixture, browser)
            let created = try await browser.send(
                .post, "/admin/api/clients",
                json: """
                    {"application_type":"web","client_name":"Reports site","redirect_uris":["https://reports.example/cb"],
                     "scope":"profile activity","policy_uri":"https://reports.example/privacy","first_party":true,
                     "consent_markdown":"Reads **activity**"}
                    """, headers: headers)
            #expect(created.status == .created, "\(created.body)")
            #expect(created.headers[.cacheControl] == "no-store")
            let object = created.jsonObject
            let id = try #require(object["client_id"] as? String)
            #expect((object["client_secret"] as? String)?.hasPrefix("lk_cs_") == true)
            #expect(object["token_endpoint_auth_method"] as? String == "client_secret_basic")
            #expect(object["grant_types"] as? [String] == ["authorization_code", "refresh_token"])
            #expect(object["first_party"] as? Bool == true)

            let read = try await browser.send(.get, "/admin/api/clients/\(id)", headers: headers)
            #expect(read.jsonObject["client_secret"] == nil, "the secret is never shown again")
            #expect(read.jsonObject["client_name"] as? String == "Reports site")

            // PUT what was read back, with one change: the derived members agree, so it is accepted.
            var changed = read.jsonObject
            changed["client_name"] = "Reports"
            let body = String(decoding: try JSONSerialization.data(withJSONObject: changed), as: UTF8.self)
            let replaced = try await browser.send(.put, "/admin/api/clients/\(id)", json: body, headers: headers)
            #expect(replaced.status == .ok && replaced.jsonObject["client_name"] as? String == "Reports", "\(replaced.body)")
            #expect(try await fixture.store.client(id: ClientID(rawValue: id))?.name == "Reports")

            let listed = try await browser.send(.get, "/admin/api/clients", headers: headers)
            #expect((listed.jsonObject["clients"] as? [[String: Any]])?.contains { $0["client_id"] as? String == id } == true)
            let deleted = try await browser.send(.delete, "/admin/api/clients/\(id)", headers: headers)
            #expect(deleted.status == .noContent && deleted.body.isEmpty)
            #expect(try await browser.send(.get, "/admin/api/clients/\(id)", headers: headers).status == .notFound)
        }
    }

    @Test("Bad input: 400 naming the member, nothing half-saved")
    func badInput() async throws {
        try await withLiveServer { fixture, browser in
            let (_, headers) = try await adminToken(fixture, browser)
            let before = try await fixture.store.clients()
            let cases: [(String, String, String)] = [
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://evil.example/cb"]}"#,
                    "redirect_uris", "invalid_redirect_uri"
                ),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":"http://127.0.0.1/cb"}"#, "redirect_uris",
                    "invalid_redirect_uri"
                ),
                (#"{"application_type":"robot","client_name":"A"}"#, "application_type", "invalid_client_metadata"),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://127.0.0.1/cb"],"scope":"nope"}"#,
                    "scope", "invalid_client_metadata"
                ),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://127.0.0.1/cb"],"first_party":"yes"}"#,
                    "first_party", "invalid_client_metadata"
                ),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"client_secret_basic"}"#,
                    "token_endpoint_auth_method", "invalid_client_metadata"
                ),
                // Found by the fuzzer: a null inside an array was a 500, a null member was taken as left out.
                (
                    #"{"application_type":"web","client_name":"A","redirect_uris":["https://a.example/cb"],"response_types":[null]}"#,
                    "response_types", "invalid_client_metadata"
                ),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://127.0.0.1/cb"],"logo_uri":null}"#,
                    "logo_uri", "invalid_client_metadata"
                ),
                (
                    #"{"application_type":"native","client_name":"A","redirect_uris":["http://127.0.0.1/cb"],"jwks_uri":"https://x"}"#,
                    "jwks_uri", "invalid_client_metadata"
                ),
            ]
            for (json, field, code) in cases {
                let page = try await browser.send(.post, "/admin/api/clients", json: json, headers: headers)
                #expect(page.status == .badRequest, "\(json)")
                #expect(page.jsonObject["field"] as? String == field, "\(json) → \(page.body)")
                #expect(page.jsonObject["error"] as? String == code, "\(json) → \(page.body)")
            }
            #expect(try await fixture.store.clients() == before)
            // A replacement that fails leaves the client as it was.
            let id = fixture.native.id.rawValue
            let bad = try await browser.send(
                .put, "/admin/api/clients/\(id)",
                json: #"{"client_name":"Renamed","redirect_uris":["http://evil.example/cb"]}"#, headers: headers)
            #expect(bad.status == .badRequest)
            let other = try await browser.send(
                .put, "/admin/api/clients/\(id)", json: #"{"client_id":"\#(fixture.web.id)","client_name":"Renamed"}"#,
                headers: headers)
            #expect(other.status == .badRequest && other.jsonObject["field"] as? String == "client_id")
            #expect(try await fixture.store.client(id: fixture.native.id) == fixture.native)
            let notJSON = try await browser.post("/admin/api/clients", body: "client_name=A", headers: headers)
            #expect(notJSON.status == .unsupportedMediaType)
            let broken = try await browser.send(.post, "/admin/api/clients", json: "{", headers: headers)
            #expect(broken.status == .badRequest)
        }
    }

    @Test("Users, scopes and grants: create, change role, disable (tokens stop), revoke, delete")
    func usersScopesGrants() async throws {
        try await withLiveServer { fixture, browser in
            let (_, headers) = try await adminToken(fixture, browser)
            let created = try await browser.send(
                .post, "/admin/api/users", json: #"{"username":"carol","password":"carol-password","name":"Carol"}"#,
                headers: headers)
            #expect(created.status == .created && created.jsonObject["role"] as? String == "none", "\(created.body)")
            let carol = try #require(created.jsonObject["user_id"] as? String)
            let promoted = try await browser.send(
                .patch, "/admin/api/users/\(carol)", json: #"{"role":"admin"}"#, headers: headers)
            #expect(promoted.jsonObject["role"] as? String == "admin")
            // The console's "Require a second factor of this account", through the API.
            #expect(promoted.jsonObject["second_factor_required"] as? Bool == false)
            let required = try await browser.send(
                .patch, "/admin/api/users/\(carol)", json: #"{"second_factor_required":true}"#, headers: headers)
            #expect(required.jsonObject["second_factor_required"] as? Bool == true)
            #expect(try await fixture.store.user(username: "carol")?.secondFactorRequired == true)
            let weak = try await browser.send(
                .patch, "/admin/api/users/\(carol)", json: #"{"password":"short"}"#, headers: headers)
            #expect(weak.status == .badRequest)
            let null = try await browser.send(.patch, "/admin/api/users/\(carol)", json: #"{"password":null}"#, headers: headers)
            #expect(null.status == .badRequest && null.jsonObject["field"] as? String == "password")

            let code = try await fixture.code()
            let tokens = try await fixture.exchange(code).get()
            let grants = try await browser.send(.get, "/admin/api/grants?user_id=\(fixture.alice.id)", headers: headers)
            #expect(
                (grants.jsonObject["grants"] as? [[String: Any]])?.first?["client_id"] as? String == fixture.native.id.rawValue)
            // A well-formed id that names no user is 404; no id at all is a bad request.
            #expect(try await browser.send(.get, "/admin/api/grants?user_id=fk", headers: headers).status == .notFound)
            #expect(try await browser.send(.get, "/admin/api/grants", headers: headers).status == .badRequest)
            #expect(
                try await browser.send(.delete, "/admin/api/grants?user_id=fk&client_id=\(fixture.native.id)", headers: headers)
                    .status == .notFound)
            let disabled = try await browser.send(
                .patch, "/admin/api/users/\(fixture.alice.id)", json: #"{"disabled":true}"#, headers: headers)
            #expect(disabled.jsonObject["disabled"] as? Bool == true)
            let userinfo = try await browser.get("/userinfo", headers: [.authorization: "Bearer " + tokens.accessToken])
            #expect(userinfo.status == .unauthorized, "a disabled user's token stops at once")

            let scope = try await browser.send(
                .post, "/admin/api/scopes", json: #"{"name":"notes.read","description":"Read your notes"}"#, headers: headers)
            #expect(scope.status == .ok)
            let scopes = try await browser.send(.get, "/admin/api/scopes", headers: headers)
            #expect((scopes.jsonObject["scopes"] as? [[String: Any]])?.contains { $0["name"] as? String == "notes.read" } == true)
            #expect(try await browser.send(.delete, "/admin/api/scopes/notes.read", headers: headers).status == .noContent)
            #expect(try await browser.send(.delete, "/admin/api/scopes/profile", headers: headers).status == .conflict)

            let revoked = try await browser.send(
                .delete, "/admin/api/grants?user_id=\(fixture.bob.id)&client_id=\(fixture.native.id)", headers: headers)
            #expect(revoked.status == .noContent)
            #expect(try await browser.send(.delete, "/admin/api/users/\(carol)", headers: headers).status == .noContent)
            #expect(try await fixture.store.user(username: "carol") == nil)
        }
    }

    @Test("Resources: list, add with the CLI's checks, delete by ?resource=")
    func resources() async throws {
        try await withLiveServer { fixture, browser in
            let (_, headers) = try await adminToken(fixture, browser)
            let body = #"{"resource":"https://mcp.example/mcp","name":"MCP","scopes":["sleep"],"token_format":"jwt"}"#
            let added = try await browser.send(.post, "/admin/api/resources", json: body, headers: headers)
            #expect(added.status == .created && added.jsonObject["token_format"] as? String == "jwt")
            let again = try await browser.send(.post, "/admin/api/resources", json: body, headers: headers)
            #expect(again.status == .badRequest && again.jsonObject["field"] as? String == "resource")
            for (bad, field) in [
                (#"{"resource":"http://mcp.example/","name":"x","scopes":["sleep"]}"#, "resource"),
                (#"{"resource":"https://a.example/","name":"x","scopes":["nope"]}"#, "scopes"),
                (#"{"resource":"https://a.example/","name":"x","scopes":["sleep"],"token_format":"paseto"}"#, "token_format"),
                (#"{"resource":"https://a.example/","name":"x","scopes":["sleep"],"extra":1}"#, "extra"),
            ] {
                let refused = try await browser.send(.post, "/admin/api/resources", json: bad, headers: headers)
                #expect(refused.status == .badRequest && refused.jsonObject["field"] as? String == field, "\(bad)")
            }
            let listed = try await browser.send(.get, "/admin/api/resources", headers: headers)
            #expect(
                (listed.jsonObject["resources"] as? [[String: Any]])?.map { $0["resource"] as? String } == [
                    "https://mcp.example/mcp"
                ])
            let query = "?resource=" + FormParameters.percentEncode("https://mcp.example/mcp")
            #expect(try await browser.send(.delete, "/admin/api/resources" + query, headers: headers).status == .noContent)
            #expect(try await browser.send(.delete, "/admin/api/resources" + query, headers: headers).status == .notFound)
            #expect(try await fixture.store.resources().isEmpty)
        }
    }

    @Test("Providers: add with the CLI's checks, the secret sealed and never read back, disable, delete")
    func providers() async throws {
        try await withLiveServer { fixture, browser in
            let (_, headers) = try await adminToken(fixture, browser)
            let body = """
                {"name":"github","display_name":"GitHub","kind":"oauth2","client_id":"lk","client_secret":"s3cret-value",
                 "authorization_endpoint":"https://github.com/login/oauth/authorize",
                 "token_endpoint":"https://github.com/login/oauth/access_token","userinfo_endpoint":"https://api.github.com/user",
                 "claims":{"subject":"id","username":"login"},"scopes":["read:user"],"creates_accounts":false}
                """
            let added = try await browser.send(.post, "/admin/api/providers", json: body, headers: headers)
            #expect(added.status == .created && added.jsonObject["confidential"] as? Bool == true)
            #expect(added.jsonObject["callback"] as? String == Fixture.issuer + "/federation/github/callback")
            #expect((added.jsonObject["claims"] as? [String: String])?["subject"] == "id")
            #expect(!added.body.contains("s3cret-value"))
            let stored = try #require(try await fixture.store.identityProvider(name: "github"))
            #expect(stored.sealedClientSecret.map { !$0.contains("s3cret-value") } == true && !stored.createsAccounts)
            for (bad, field) in [
                (#"{"name":"Git_Hub","client_id":"x","issuer":"https://idp.example"}"#, "name"),
                (#"{"name":"gh","client_id":"x","issuer":"http://idp.example"}"#, "issuer"),
                (#"{"name":"gh","client_id":"x","kind":"saml","issuer":"https://idp.example"}"#, "kind"),
                (#"{"name":"gh","client_id":"x","kind":"oauth2"}"#, "authorization_endpoint"),
                (#"{"name":"gh","client_id":"x","issuer":"https://idp.example","claims":{"groups":"g"}}"#, "claims"),
                (#"{"name":"github","client_id":"x","issuer":"https://idp.example"}"#, "name"),
            ] {
                let refused = try await browser.send(.post, "/admin/api/providers", json: bad, headers: headers)
                #expect(refused.status == .badRequest && refused.jsonObject["field"] as? String == field, "\(bad)")
            }
            let disabled = try await browser.send(
                .patch, "/admin/api/providers/github", json: #"{"enabled":false}"#, headers: headers)
            #expect(disabled.status == .ok && disabled.jsonObject["enabled"] as? Bool == false)
            let listed = try await browser.send(.get, "/admin/api/providers", headers: headers)
            #expect((listed.jsonObject["providers"] as? [[String: Any]])?.map { $0["name"] as? String } == ["github"])
            #expect(try await browser.send(.get, "/admin/api/providers/nobody", headers: headers).status == .notFound)
            #expect(try await browser.send(.delete, "/admin/api/providers/github", headers: headers).status == .noContent)
            #expect(try await browser.send(.delete, "/admin/api/providers/github", headers: headers).status == .notFound)
            #expect(try await fixture.store.identityProviders().isEmpty)
        }
    }
}
