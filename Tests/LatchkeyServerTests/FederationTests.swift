import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Upstream identity providers over plain types: what a provider's userinfo answer is read as,
/// the username a new account gets, how sessions record the provider, and what an administrator
/// may configure. The round trips against real providers are `Tests/Interop/test_federation.py`.
@Suite("Federation")
struct FederationTests {
    @Test("A userinfo answer is read through the provider's claims: GitHub's numeric id, a verified address only when it says so")
    func userInfoMapping() throws {
        var github = ClaimMapping()
        github.subject = "id"
        github.username = "login"
        let identity = try #require(
            UpstreamIdentity(
                ["id": 583_231, "login": "octocat", "name": "The Octocat", "email": "octo@example.com"], claims: github))
        #expect(
            identity
                == UpstreamIdentity(
                    subject: "583231", email: "octo@example.com", emailVerified: false, name: "The Octocat", username: "octocat"))
        #expect(identity.emailDomain == "example.com")
        // No subject, an empty one, a fraction or a boolean: no identity.
        #expect(UpstreamIdentity(["login": "octocat"], claims: github) == nil)
        #expect(UpstreamIdentity(["id": ""], claims: github) == nil)
        #expect(UpstreamIdentity(["id": 1.5], claims: github) == nil)
        #expect(UpstreamIdentity(["id": true], claims: github) == nil)
        let standard = ClaimMapping()
        #expect(
            UpstreamIdentity(["sub": "a", "email": "a@x.org", "email_verified": true], claims: standard)?.emailVerified == true)
        #expect(
            UpstreamIdentity(["sub": "a", "email": "a@x.org", "email_verified": "true"], claims: standard)?.emailVerified == true)
        #expect(
            UpstreamIdentity(["sub": "a", "email": "a@x.org", "email_verified": 1], claims: standard)?.emailVerified == false)
        #expect(UpstreamIdentity(["sub": "a", "email": NSNull()], claims: standard)?.email == nil)
    }

    @Test("A new account is named as a person could name it at sign-up: their name there, their address, or a hash")
    func usernames() {
        func name(_ username: String?, _ email: String?) -> String {
            Federation.username(
                for: UpstreamIdentity(subject: "42", email: email, emailVerified: false, name: nil, username: username),
                at: "corp")
        }
        let fallback = "corp-" + RandomToken.hash("42").prefix(12)
        #expect(name("ada", "ada@example.com") == "ada")
        #expect(name(nil, "grace@example.com") == "grace")
        #expect(name("  ", nil) == fallback)
        // Nothing that passes for a link or another script's letters.
        #expect(name("evil.example/login", "ok.name@example.com") == "ok.name")
        #expect(name("\u{0430}dmin", nil) == fallback)
        #expect(name("a b", nil) == fallback)
        #expect(name(String(repeating: "x", count: 80), nil).count == 48)
        #expect(Federation.usableEmail("not an address") == nil && Federation.usableEmail("a@example.com") == "a@example.com")
        #expect(Federation.usableName("  Ada\u{0007} Lovelace ") == "Ada Lovelace" && Federation.usableName("\n") == nil)
    }

    @Test("Sessions record the provider before the methods, and a second step keeps it")
    func methodsRecordTheProvider() {
        let federated = AuthenticationMethods.federated(through: "corp")
        #expect(federated.description == "idp=corp fed")
        #expect(AuthenticationMethods(storeValue: federated.description) == federated)
        let twoSteps = federated.adding(secondFactor: "otp")
        #expect(twoSteps.values == ["fed", "otp", "mfa"] && twoSteps.identityProvider == "corp")
        #expect(AuthenticationMethods(storeValue: twoSteps.description) == twoSteps)
        #expect(twoSteps.level == .twoFactors && federated.level == .oneFactor)
        #expect(AuthenticationMethods.password.adding(secondFactor: "otp") == .passwordAndOneTimeCode)
        #expect(AuthenticationMethods(storeValue: "pwd").identityProvider == nil)
    }

    @Test("An administrator's provider: a name for paths, https endpoints (http on loopback), openid for OpenID")
    func registrationRules() async throws {
        let fixture = try await Fixture.make()
        let key = Fixture.keyEncryptionKey
        func add(_ change: (inout IdentityProviderRegistration) -> Void) async throws -> IdentityProvider {
            var registration = IdentityProviderRegistration(name: "corp", issuer: "https://idp.example", clientID: "lk")
            change(&registration)
            return try await fixture.admin.addIdentityProvider(registration, keyEncryptionKey: key)
        }
        for bad in ["Corp", "-corp", "co_rp", "", String(repeating: "a", count: 33), "corp/x"] {
            await #expect(throws: AdministrationError.self) { try await add { $0.name = bad } }
        }
        for bad in ["http://idp.example", "ftp://idp.example", "https://user@idp.example", "not a url"] {
            await #expect(throws: AdministrationError.self) { try await add { $0.issuer = bad } }
        }
        await #expect(throws: AdministrationError.self) { try await add { $0.scope = ["profile"] } }
        await #expect(throws: AdministrationError.self) { try await add { $0.kind = .oauth2 } }
        let added = try await add {
            $0.clientSecret = "s3cret"
            $0.allowedEmailDomains = ["Example.COM"]
        }
        #expect(added.scope == ScopeSet(["openid", "profile", "email"]) && added.allowedEmailDomains == ["example.com"])
        let sealed = try #require(added.sealedClientSecret)
        #expect(!sealed.contains("s3cret"))
        #expect(try key.open(sealed, kid: UpstreamClients.secretBinding("corp")) == Data("s3cret".utf8))
        // Bound to its provider: another row cannot use it.
        #expect(throws: (any Error).self) { try key.open(sealed, kid: UpstreamClients.secretBinding("other")) }
        await #expect(throws: AdministrationError.self) { try await add { _ in } }
        let local = try await add {
            $0.name = "local"
            $0.issuer = "http://localhost:8080"
        }
        #expect(local.sealedClientSecret == nil)
    }
}
