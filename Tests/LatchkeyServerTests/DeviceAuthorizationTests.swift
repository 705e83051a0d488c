import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The device authorization grant (RFC 8628) on the endpoint logic, without a socket: the device's
/// requests, the user's code entry, sign-in and consent, and the device's polls.
@Suite("Device authorization grant")
struct DeviceAuthorizationTests {
    static let grantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// A fixture whose native client (and web client) may use the grant.
    func fixture(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> Fixture {
        let fixture = try await Fixture.make(configure: configure)
        for client in [fixture.native, fixture.web] {
            var settings = ClientSettings(client, ownerUsername: nil)
            settings.allowDeviceCode = true
            settings.scopes.append("openid")
            _ = try await fixture.admin.updateClient(id: client.id.rawValue, settings)
        }
        return fixture
    }

    func request(_ fixture: Fixture, _ parameters: [(String, String)], authorization: String? = nil) async
        -> Result<DeviceAuthorizationResponse, TokenEndpointError>
    {
        await fixture.server.deviceAuthorization.authorizeDevice(
            TokenRequest(body: FormParameters(parameters), authorization: authorization))
    }

    func started(_ fixture: Fixture, scope: String = "profile activity") async throws -> DeviceAuthorizationResponse {
        switch await request(fixture, [("client_id", fixture.native.id.rawValue), ("scope", scope)]) {
        case .success(let response): return response
        case .failure(let failure): throw FixtureError("device authorization refused: \(failure.error)")
        }
    }

    func poll(_ fixture: Fixture, _ deviceCode: String, client: Client? = nil) async -> Result<TokenResponse, TokenEndpointError>
    {
        await fixture.token([
            ("grant_type", Self.grantType), ("device_code", deviceCode), ("client_id", (client ?? fixture.native).id.rawValue),
        ])
    }

    func pollError(_ fixture: Fixture, _ deviceCode: String, client: Client? = nil) async -> String? {
        await poll(fixture, deviceCode, client: client).failure?.error.code.rawValue
    }

    func enter(_ fixture: Fixture, _ code: String, session: BrowserSession, address: String = "192.0.2.1") async throws
        -> DeviceEntryResult
    {
        try await fixture.server.authorization.enterUserCode(
            FormParameters([("csrf_token", session.csrfToken), ("user_code", code)]), session: session,
            clientAddress: address)
    }

    /// Enters the code in a signed-in session and answers the consent page.
    func decide(_ fixture: Fixture, _ response: DeviceAuthorizationResponse, allow: Bool, scopes: [String] = ["profile"])
        async throws -> String?
    {
        let session = try await fixture.signedInSession()
        guard case .proceed(.consent(let prompt)) = try await enter(fixture, response.userCode, session: session) else {
            throw FixtureError("expected the consent page")
        }
        #expect(prompt.fromAnotherDevice)
        #expect(prompt.redirectURI == nil)
        let decided = try await fixture.server.authorization.decide(
            FormParameters(
                [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", allow ? "allow" : "deny")]
                    + scopes.map { ("scope", $0) }), session: session)
        guard case .redirect(let location) = decided else { return nil }
        return location
    }

    @Test("A device request answers the codes, the page and the interval (RFC 8628 §3.2)")
    func response() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        #expect(response.deviceCode.hasPrefix("lk_dc_"))
        #expect(response.userCode.wholeMatch(of: /[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}/) != nil)
        #expect(response.verificationURI == Fixture.issuer + "/device")
        #expect(response.verificationURIComplete == Fixture.issuer + "/device?user_code=" + response.userCode)
        #expect(response.expiresIn == 600)
        #expect(response.interval == 5)
        let json = try JSONSerialization.jsonObject(with: Data(response.jsonBody.utf8)) as? [String: Any]
        #expect(json?["device_code"] as? String == response.deviceCode)
        #expect(json?["verification_uri_complete"] as? String == response.verificationURIComplete)
        let metadata = try await fixture.server.metadata()
        #expect(metadata.deviceAuthorizationEndpoint == Fixture.issuer + "/oauth2/device_authorization")
        #expect(metadata.grantTypesSupported.contains(Self.grantType))
    }

    @Test("Only clients registered for the grant, with allowed scopes, may start one")
    func refusals() async throws {
        let fixture = try await fixture()
        // native2 is not registered for the device grant.
        let other = await request(fixture, [("client_id", fixture.native2.id.rawValue), ("scope", "profile")])
        #expect(other.failure?.error.code == .unauthorizedClient)
        let service = await request(fixture, [("scope", "activity")], authorization: fixture.serviceBasic)
        #expect(service.failure?.error.code == .unauthorizedClient)
        let scope = await request(fixture, [("client_id", fixture.native.id.rawValue), ("scope", "admin")])
        #expect(scope.failure?.error.code == .invalidScope)
        let unknown = await request(fixture, [("client_id", "nobody"), ("scope", "profile")])
        #expect(unknown.failure?.error.code == .invalidClient)
        let wrongSecret = await request(
            fixture, [("scope", "profile")], authorization: "Basic " + Data("\(fixture.web.id):nope".utf8).base64EncodedString())
        #expect(wrongSecret.failure?.error.code == .invalidClient)
        let repeated = await request(
            fixture, [("client_id", fixture.native.id.rawValue), ("scope", "profile"), ("scope", "activity")])
        #expect(repeated.failure?.error.code == .invalidRequest)
        // A confidential client authenticates and may start one.
        let web = await request(fixture, [("scope", "profile")], authorization: fixture.webBasic)
        #expect(web.value != nil)
        // The grant at the token endpoint is refused to a client not registered for it.
        #expect(await pollError(fixture, "lk_dc_whatever", client: fixture.native2) == "unauthorized_client")
    }

    @Test("Pending, then allowed: tokens for what the user left ticked, once")
    func approval() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture, scope: "openid profile activity")
        #expect(await pollError(fixture, response.deviceCode) == "authorization_pending")
        let location = try await decide(fixture, response, allow: true, scopes: ["openid", "profile"])
        #expect(location == "/device?result=approved")
        fixture.clock.advance(by: 5)
        let tokens = try await poll(fixture, response.deviceCode).get()
        #expect(tokens.scope == "openid profile")
        #expect(tokens.refreshToken != nil)
        #expect(tokens.idToken != nil)
        #expect(tokens.userID == fixture.alice.id.rawValue)
        #expect(try await fixture.isAlive(tokens.accessToken))
        // The device code works once; a second redemption revokes what the first issued.
        fixture.clock.advance(by: 5)
        #expect(await pollError(fixture, response.deviceCode) == "invalid_grant")
        #expect(try await fixture.isAlive(tokens.accessToken) == false)
        // The consent was remembered, as for any other grant.
        let consent = try await fixture.store.consent(userID: fixture.alice.id, clientID: fixture.native.id)
        #expect(consent?.scope.contains("profile") == true)
    }

    @Test("Two polls at once for an approved code: one gets the tokens, the other invalid_grant (as T10 for codes)")
    func concurrentRedemption() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        _ = try await decide(fixture, response, allow: true)
        async let first = poll(fixture, response.deviceCode)
        async let second = poll(fixture, response.deviceCode)
        let answers = await [first, second]
        #expect(answers.filter { $0.value != nil }.count == 1)
        #expect(answers.compactMap { $0.failure?.error.code }.allSatisfy { $0 == .invalidGrant })
    }

    @Test("Denied: access_denied on every poll, then expired_token")
    func denial() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let location = try await decide(fixture, response, allow: false)
        #expect(location == "/device?result=denied")
        #expect(await pollError(fixture, response.deviceCode) == "access_denied")
        fixture.clock.advance(by: 10)
        #expect(await pollError(fixture, response.deviceCode) == "access_denied")
        fixture.clock.advance(by: 600)
        #expect(await pollError(fixture, response.deviceCode) == "expired_token")
    }

    @Test("Unticking every permission denies the request too")
    func nothingGranted() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        #expect(try await decide(fixture, response, allow: true, scopes: []) == "/device?result=denied")
        #expect(await pollError(fixture, response.deviceCode) == "access_denied")
    }

    @Test("Polling too fast: slow_down adds 5 s to the stored interval; never on the first poll")
    func slowDown() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        #expect(await pollError(fixture, response.deviceCode) == "authorization_pending")  // first poll at once
        fixture.clock.advance(by: 4)
        #expect(await pollError(fixture, response.deviceCode) == "slow_down")
        let hash = RandomToken.hash(response.deviceCode)
        #expect(try await fixture.store.deviceAuthorization(deviceCodeHash: hash)?.interval == 10)
        // 5 s is no longer enough; 10 s is.
        fixture.clock.advance(by: 5)
        #expect(await pollError(fixture, response.deviceCode) == "slow_down")
        #expect(try await fixture.store.deviceAuthorization(deviceCodeHash: hash)?.interval == 15)
        fixture.clock.advance(by: 15)
        #expect(await pollError(fixture, response.deviceCode) == "authorization_pending")
    }

    @Test("An expired device code answers expired_token, and its user code is refused")
    func expiry() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        fixture.clock.advance(by: 601)
        #expect(await pollError(fixture, response.deviceCode) == "expired_token")
        let session = try await fixture.signedInSession()
        guard case .retry = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("an expired user code was accepted")
            return
        }
    }

    @Test("Approving after expiry issues nothing")
    func approvalAfterExpiry() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let session = try await fixture.signedInSession()
        guard case .proceed(.consent(let prompt)) = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("expected the consent page")
            return
        }
        fixture.clock.advance(by: 601)
        let decided = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow"), ("scope", "profile"),
            ]), session: session)
        guard case .errorPage = decided else {
            Issue.record("a decision after expiry was taken: \(decided)")
            return
        }
        #expect(await pollError(fixture, response.deviceCode) == "expired_token")
    }

    @Test("Approved but polled only after expiry: expired_token; a replay after expiry still revokes")
    func lateReplay() async throws {
        let fixture = try await fixture()
        let late = try await started(fixture)
        _ = try await decide(fixture, late, allow: true)
        fixture.clock.advance(by: 601)
        #expect(await pollError(fixture, late.deviceCode) == "expired_token")

        let response = try await started(fixture)
        _ = try await decide(fixture, response, allow: true)
        let tokens = try await poll(fixture, response.deviceCode).get()
        fixture.clock.advance(by: 601)
        #expect(await pollError(fixture, response.deviceCode) == "invalid_grant")
        let refreshed = await fixture.refresh(try #require(tokens.refreshToken))
        #expect(refreshed.failure?.error.code == .invalidGrant, "the replay revoked the grant")
    }

    @Test("Entering the code again in the same browser (a reload, a second click) leads to the same request")
    func reentry() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let session = try await fixture.signedInSession()
        guard case .proceed(.consent) = try await enter(fixture, response.userCode, session: session),
            case .proceed(.consent(let again)) = try await enter(fixture, response.userCode, session: session)
        else {
            Issue.record("the second entry did not reach the consent page")
            return
        }
        let decided = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", again.pendingID), ("decision", "allow"), ("scope", "profile"),
            ]), session: session)
        guard case .redirect("/device?result=approved") = decided else {
            Issue.record("expected approval, got \(decided)")
            return
        }
        #expect(await poll(fixture, response.deviceCode).value != nil)
    }

    @Test("A device code is another client's: invalid_grant, and the request stays pending")
    func otherClient() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let stolen = await fixture.token(
            [("grant_type", Self.grantType), ("device_code", response.deviceCode)], authorization: fixture.webBasic)
        #expect(stolen.failure?.error.code == .invalidGrant)
        #expect(await pollError(fixture, response.deviceCode) == "authorization_pending")
    }

    @Test("A device code is not an authorization code, nor the reverse")
    func notACode() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        _ = try await decide(fixture, response, allow: true)
        let asCode = await fixture.token([
            ("grant_type", "authorization_code"), ("code", response.deviceCode), ("client_id", fixture.native.id.rawValue),
        ])
        #expect(asCode.failure?.error.code == .invalidGrant)
        let code = try await fixture.code()
        #expect(await pollError(fixture, code) == "invalid_grant")
        // The device code still works after the attempt.
        #expect(await poll(fixture, response.deviceCode).value != nil)
    }

    @Test("A user code is entered once: a second browser cannot take the request over")
    func claimedOnce() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let first = try await fixture.signedInSession()
        guard case .proceed(.consent) = try await enter(fixture, response.userCode, session: first) else {
            Issue.record("expected the consent page")
            return
        }
        let second = try await fixture.signedInSession(as: "bob")
        guard case .retry = try await enter(fixture, response.userCode, session: second) else {
            Issue.record("the second browser got the request")
            return
        }
    }

    @Test("Entry forgives case, spaces and dashes; not signed in leads to sign-in first")
    func entry() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        let typed = " " + response.userCode.lowercased().replacingOccurrences(of: "-", with: " ") + " "
        guard case .proceed(.signIn(let pendingID, _, _, _)) = try await enter(fixture, typed, session: anonymous) else {
            Issue.record("expected the sign-in page")
            return
        }
        #expect(try await fixture.server.authorization.clientName(pendingID: pendingID) == fixture.native.name)
    }

    @Test("The form needs the session's CSRF token")
    func csrf() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        let session = try await fixture.signedInSession()
        let forged = try await fixture.server.authorization.enterUserCode(
            FormParameters([("csrf_token", "lk_xs_forged"), ("user_code", response.userCode)]), session: session,
            clientAddress: "192.0.2.1")
        guard case .forbidden = forged else {
            Issue.record("a forged form was accepted")
            return
        }
        // The code was not spent by the forged form.
        guard case .proceed = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("the code was spent")
            return
        }
    }

    @Test("Guessing user codes is throttled per address and for everyone (RFC 8628 §5.1)")
    func guessing() async throws {
        let fixture = try await fixture { configuration in
            configuration.userCodeAttemptsPerAddress = 3
            configuration.userCodeAttemptsOverall = 5
            configuration.deviceCodeLifetime = 3_600
        }
        let response = try await started(fixture)
        let session = try await fixture.signedInSession()
        // A malformed code costs nothing; a wrong one counts.
        for _ in 0..<5 {
            guard case .retry = try await enter(fixture, "AEIOU", session: session) else {
                Issue.record("malformed accepted"); return
            }
        }
        for _ in 0..<3 {
            guard case .retry = try await enter(fixture, "BBBB-BBBB", session: session) else {
                Issue.record("guess accepted"); return
            }
        }
        // Over the address's limit: even the right code is not looked at.
        guard case .throttled(let retryAfter) = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("not throttled")
            return
        }
        #expect(retryAfter > 0)
        // Another address may go on until everyone's limit.
        for _ in 0..<2 {
            guard case .retry = try await enter(fixture, "CCCC-CCCC", session: session, address: "198.51.100.7") else {
                Issue.record("guess accepted")
                return
            }
        }
        guard case .throttled = try await enter(fixture, response.userCode, session: session, address: "203.0.113.9") else {
            Issue.record("the overall limit did not hold")
            return
        }
        // After the window, the right code works again.
        fixture.clock.advance(by: 15 * 60 + 1)
        guard case .proceed = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("the right code was refused after the window")
            return
        }
    }

    @Test("A personal app's device request is refused to anyone but its owner")
    func personalApp() async throws {
        let fixture = try await fixture()
        var settings = ClientSettings(fixture.personal, ownerUsername: "alice")
        settings.allowDeviceCode = true
        _ = try await fixture.admin.updateClient(id: fixture.personal.id.rawValue, settings)
        let response = try await request(fixture, [("client_id", fixture.personal.id.rawValue), ("scope", "profile")]).get()
        let session = try await fixture.signedInSession(as: "bob")
        guard case .proceed(.redirect(let location)) = try await enter(fixture, response.userCode, session: session) else {
            Issue.record("expected a redirect")
            return
        }
        #expect(location == "/device?result=denied")
        #expect(await pollError(fixture, response.deviceCode, client: fixture.personal) == "access_denied")
    }

    @Test("Only native and web apps may be registered for the grant")
    func registration() async throws {
        let fixture = try await fixture()
        var settings = ClientSettings(fixture.spa, ownerUsername: nil)
        settings.allowDeviceCode = true
        await #expect(throws: AdministrationError.self) {
            _ = try await fixture.admin.updateClient(id: fixture.spa.id.rawValue, settings)
        }
    }

    @Test("A store that keeps the requests after a restart: the device polls on")
    func survivesRestart() async throws {
        let fixture = try await fixture()
        let response = try await started(fixture)
        _ = try await decide(fixture, response, allow: true)
        let reopened = try fixture.reopened()
        #expect(await poll(reopened, response.deviceCode).value != nil)
    }

    @Test("An app may register for the grant itself (RFC 7591 grant_types), and an update may drop it")
    func dynamicRegistration() async throws {
        let fixture = try await Fixture.make { $0.dynamicRegistration.mode = .open }
        let json =
            #"{"client_name":"CLI","redirect_uris":["http://127.0.0.1/callback"],"scope":"profile","grant_types":["authorization_code","refresh_token","urn:ietf:params:oauth:grant-type:device_code"]}"#
        let answer = try await fixture.server.registration.register(
            Array(json.utf8), authorization: nil, clientAddress: "192.0.2.7")
        #expect(answer.status == 201)
        let object = try #require(try JSONSerialization.jsonObject(with: Data((answer.json ?? "").utf8)) as? [String: Any])
        #expect((object["grant_types"] as? [String])?.contains(Self.grantType) == true)
        let clientID = try #require(object["client_id"] as? String)
        #expect(try await fixture.store.client(id: ClientID(rawValue: clientID))?.allowDeviceCode == true)
        let started = await request(fixture, [("client_id", clientID), ("scope", "profile")])
        #expect(started.value != nil)

        let token = try #require(object["registration_access_token"] as? String)
        let update =
            #"{"client_id":"\#(clientID)","client_name":"CLI","redirect_uris":["http://127.0.0.1/callback"],"scope":"profile","grant_types":["authorization_code","refresh_token"]}"#
        let updated = try await fixture.server.registration.updateRegistration(
            clientID: clientID, Array(update.utf8), authorization: "Bearer " + token)
        #expect(updated.status == 200)
        #expect(try await fixture.store.client(id: ClientID(rawValue: clientID))?.allowDeviceCode == false)
        let refused = await request(fixture, [("client_id", clientID), ("scope", "profile")])
        #expect(refused.failure?.error.code == .unauthorizedClient)
    }
}
