import Crypto
import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Clients that authenticate with signed assertions (`private_key_jwt`, RFC 7523 §2.2) at the
/// token endpoint and the others that authenticate clients (docs/threat-model.md CA1–CA6).
@Suite("Client assertions")
struct ClientAssertionTests {
    let key = P256.Signing.PrivateKey()

    func register(_ fixture: Fixture, keys: ClientKeys? = nil) async throws -> Client {
        let jwks = #"{"keys":[\#(PublicJWK(key.publicKey).json(adding: [("kid", "k1")]))]}"#
        return try await fixture.admin.registerClient(
            type: .service, name: "Keyed service", redirectURIs: [], scopes: ["profile"], keys: keys ?? .jwks(jwks)
        ).client
    }

    func assertion(_ client: Client, audience: String = Fixture.issuer, jti: String = UUID().uuidString, at now: Date)
        throws -> String
    {
        try JWTAssertion.clientAssertion(
            key: key, kid: "k1", clientID: client.id.rawValue, audience: audience, issuedAt: now, jti: jti)
    }

    func credentials(_ assertion: String, extra: [(String, String)] = []) -> [(String, String)] {
        [
            ("grant_type", "client_credentials"), ("client_assertion_type", JWTAssertion.clientAssertionType),
            ("client_assertion", assertion),
        ] + extra
    }

    @Test("A client registered with keys gets tokens with an assertion, has no secret, and says private_key_jwt")
    func accepted() async throws {
        let fixture = try await Fixture.make()
        let client = try await register(fixture)
        #expect(client.secretHash == nil && client.tokenEndpointAuthMethod == "private_key_jwt")
        let token = await fixture.token(credentials(try assertion(client, at: fixture.clock.now)))
        #expect(token.value?.accessToken != nil)
        let atTokenEndpoint = try assertion(client, audience: Fixture.issuer + "/oauth2/token", at: fixture.clock.now)
        #expect(await fixture.token(credentials(atTokenEndpoint, extra: [("client_id", client.id.rawValue)])).value != nil)
        await #expect(throws: AdministrationError.self) { try await fixture.admin.rotateSecret(clientID: client.id.rawValue) }
        let metadata = try await fixture.server.metadata()
        #expect(metadata.tokenEndpointAuthMethodsSupported.contains("private_key_jwt"))
        #expect(metadata.tokenEndpointAuthSigningAlgValuesSupported == ["ES256", "RS256", "PS256", "EdDSA"])
    }

    @Test("CA1 An assertion is used once: a replay, and all but one of eight at once, are refused")
    func replay() async throws {
        let fixture = try await Fixture.make()
        let client = try await register(fixture)
        let once = try assertion(client, at: fixture.clock.now)
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { await fixture.token(credentials(once)).value != nil } }
            return await group.reduce(into: 0) { count, ok in count += ok ? 1 : 0 }
        }
        #expect(results == 1)
        let again = await fixture.token(credentials(once)).failure
        #expect(again?.error.code == .invalidClient)
        #expect(again?.error.errorDescription?.contains("used before") == true)
    }

    @Test("CA5 Two methods at once, a mismatched client_id, a secret for a keyed client, an assertion for a secret client")
    func wrongMethod() async throws {
        let fixture = try await Fixture.make()
        let client = try await register(fixture)
        let now = fixture.clock.now
        let both = await fixture.token(credentials(try assertion(client, at: now)), authorization: fixture.serviceBasic)
        #expect(both.failure?.error.code == .invalidRequest)
        let withSecret = await fixture.token(credentials(try assertion(client, at: now), extra: [("client_secret", "x")]))
        #expect(withSecret.failure?.error.code == .invalidRequest)
        let otherID = await fixture.token(credentials(try assertion(client, at: now), extra: [("client_id", "someone")]))
        #expect(otherID.failure?.error.code == .invalidRequest)
        let wrongType = await fixture.token([
            ("grant_type", "client_credentials"), ("client_assertion_type", "urn:example:other"),
            ("client_assertion", try assertion(client, at: now)),
        ])
        #expect(wrongType.failure?.error.code == .invalidRequest)
        // The secret client's id in an assertion signed by a key it never registered.
        let forged = try JWTAssertion.clientAssertion(
            key: key, kid: "k1", clientID: fixture.service.id.rawValue, audience: Fixture.issuer, issuedAt: now)
        #expect(await fixture.token(credentials(forged)).failure?.error.code == .invalidClient)
        // A keyed client has nothing to send as a secret, or as client_id alone.
        let idOnly = await fixture.token([("grant_type", "client_credentials"), ("client_id", client.id.rawValue)])
        #expect(idOnly.failure?.error.code == .invalidClient)
        let basic = "Basic " + Data("\(client.id):anything".utf8).base64EncodedString()
        #expect(
            await fixture.token([("grant_type", "client_credentials")], authorization: basic).failure?.error.code
                == .invalidClient)
    }

    @Test("Keys are only for confidential clients; a key set must be usable; jwks_uri must be https; the kind stays")
    func registrationRules() async throws {
        let fixture = try await Fixture.make()
        let jwks = ClientKeys.jwks(#"{"keys":[\#(PublicJWK(key.publicKey).json())]}"#)
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.registerClient(
                type: .native, name: "N", redirectURIs: ["http://127.0.0.1/cb"], scopes: [], keys: jwks)
        }
        for bad in [ClientKeys.jwks(#"{"keys":[]}"#), .jwks("not json"), .jwksURI("http://keys.example/jwks"), .jwksURI("keys")] {
            await #expect(throws: AdministrationError.self) {
                try await fixture.admin.registerClient(type: .service, name: "S", redirectURIs: [], scopes: [], keys: bad)
            }
        }
        let keyed = try await register(fixture)
        var settings = ClientSettings(keyed, ownerUsername: nil)
        settings.keys = nil
        await #expect(throws: AdministrationError.self) { try await fixture.admin.updateClient(id: keyed.id.rawValue, settings) }
        settings.keys = .jwksURI("https://keys.example/jwks.json")
        #expect(try await fixture.admin.updateClient(id: keyed.id.rawValue, settings).keys == settings.keys)
        var secretClient = ClientSettings(fixture.service, ownerUsername: nil)
        secretClient.keys = jwks
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.updateClient(id: fixture.service.id.rawValue, secretClient)
        }
    }

    @Test("CA6 A jwks_uri that cannot be read is refused as invalid_client, why only in the log")
    func keySetUnreachable() async throws {
        let fixture = try await Fixture.make()
        let client = try await register(fixture, keys: .jwksURI("https://keys.example/jwks.json"))
        let failure = await fixture.token(credentials(try assertion(client, at: fixture.clock.now))).failure
        #expect(failure?.error.code == .invalidClient)
        #expect(failure?.error.errorDescription == "Client authentication failed.")
    }
}
