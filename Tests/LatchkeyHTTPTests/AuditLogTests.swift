import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

@Suite("Audit log")
struct AuditLogTests {
    /// Every secret the test sees: none may appear in any log line.
    final class Secrets: @unchecked Sendable {
        // @unchecked: used from the test's task only.
        var values: [String] = []
        func add(_ value: String?) { if let value, value.count >= 8 { values.append(value) } }
    }

    @Test("One JSON event per line for sign-ins, consent, issuance, reuse, revocation and client changes; no secret in any line")
    func auditLog() async throws {
        let dir = Scratch.path("audit").path
        let port = try freePort()
        let server = try await ServeProcess(
            ["--dev", "--port", "\(port)", "--data-dir", dir, "--refresh-grace-period", "0"])
        try await server.waitFor("Latchkey is serving")
        let secrets = Secrets()
        let password = try #require(
            server.stdout.split(separator: "\n").first { $0.contains("password:") }?.split(separator: " ").last.map(String.init))
        let clientID = try #require(
            server.stdout.split(separator: "\n").first { $0.contains("client_id:") }?.split(separator: " ")
                .drop { !$0.hasSuffix(":") }.dropFirst().first.map(String.init))
        secrets.add(password)

        // Client changes through the CLI, beside the running server.
        let created = try await runLatchkey(
            ["clients", "create", "--type", "service", "--name", "Reports", "--scope", "profile", "--json", "--data-dir", dir])
        #expect(created.status == 0)
        let service = try #require(try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any])
        let serviceID = try #require(service["client_id"] as? String)
        let serviceSecret = try #require(service["client_secret"] as? String)
        secrets.add(serviceSecret)
        let rotated = try await runLatchkey(["clients", "rotate-secret", serviceID, "--json", "--data-dir", dir])
        let newSecret = try #require(
            (try JSONSerialization.jsonObject(with: Data(rotated.stdout.utf8)) as? [String: Any])?["client_secret"] as? String)
        secrets.add(newSecret)
        let userPassword = "a-long-user-password"
        secrets.add(userPassword)
        let user = try await runLatchkey(
            ["users", "create", "carol", "--password-stdin", "--json", "--data-dir", dir], input: userPassword)
        #expect(user.status == 0)
        let adminLog = created.stderr + rotated.stderr + user.stderr

        let browser = Browser(port: port)
        let redirectURI = "http://127.0.0.1:9/callback"
        let verifier = CodeVerifier.generate()
        secrets.add(verifier.value)
        let query = FormParameters([
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", "profile activity"),
            ("state", "state-value-1234"), ("code_challenge", verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        let login = try await browser.get(try #require(try await browser.get("/oauth2/authorize?" + query).location))
        secrets.add(login.field("csrf_token"))
        let wrongPassword = "wrong-password-\(UUID().uuidString)"
        secrets.add(wrongPassword)
        let failed = try await browser.post(
            "/login",
            form: [
                ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!), ("username", "demo"),
                ("password", wrongPassword),
            ])
        #expect(failed.status == .unauthorized)
        let consentLocation = try await browser.post(
            "/login",
            form: [
                ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!), ("username", "demo"),
                ("password", password),
            ]
        ).location
        for cookie in await browser.cookies.values { secrets.add(cookie) }
        let consent = try await browser.get(try #require(consentLocation))
        secrets.add(consent.field("csrf_token"))
        let callback = try await browser.post(
            "/oauth2/authorize",
            form: [
                ("csrf_token", consent.field("csrf_token")!), ("request", consent.field("request")!), ("decision", "allow"),
                ("scope", "profile"),
            ]
        ).location
        let code = try #require(callback.flatMap { Fixture.parameter("code", in: $0) })
        secrets.add(code)
        let exchange: [(String, String)] = [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", clientID), ("redirect_uri", redirectURI),
            ("code_verifier", verifier.value),
        ]
        let tokens = try await browser.post("/oauth2/token", form: exchange).json(TokenResponse.self)
        secrets.add(tokens.accessToken)
        secrets.add(tokens.refreshToken)
        let refresh: [(String, String)] = [
            ("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken!), ("client_id", clientID),
        ]
        let rotatedTokens = try await browser.post("/oauth2/token", form: refresh).json(TokenResponse.self)
        secrets.add(rotatedTokens.accessToken)
        secrets.add(rotatedTokens.refreshToken)
        #expect(try await browser.post("/oauth2/token", form: refresh).status == .badRequest, "reuse")
        #expect(try await browser.post("/oauth2/token", form: exchange).status == .badRequest, "code replay")

        // A service client: a wrong secret, then client credentials, introspection and revocation.
        func basic(_ secret: String) -> String { "Basic " + Data("\(serviceID):\(secret)".utf8).base64EncodedString() }
        #expect(
            try await browser.post(
                "/oauth2/token", form: [("grant_type", "client_credentials")], headers: [.authorization: basic(serviceSecret)]
            ).status == .unauthorized, "the rotated-out secret")
        let serviceToken = try await browser.post(
            "/oauth2/token", form: [("grant_type", "client_credentials")], headers: [.authorization: basic(newSecret)]
        ).json(TokenResponse.self)
        secrets.add(serviceToken.accessToken)
        let introspected = try await browser.post(
            "/oauth2/introspect", form: [("token", serviceToken.accessToken)], headers: [.authorization: basic(newSecret)])
        #expect(introspected.jsonObject["active"] as? Bool == true)
        let revoked = try await browser.post(
            "/oauth2/revoke", form: [("token", serviceToken.accessToken)], headers: [.authorization: basic(newSecret)])
        #expect(revoked.status == .ok)
        try await browser.close()
        #expect(try await server.terminate() == 0)

        let lines = (server.stderr + adminLog).split(separator: "\n").map(String.init)
        var events: Set<String> = []
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["time"] is String && object?["level"] is String && object?["message"] is String, "\(line)")
            if let event = object?["event"] as? String { events.insert(event) }
            for secret in secrets.values where line.contains(secret) {
                Issue.record("a secret appears in the log: \(line)")
            }
        }
        let expected: Set<String> = [
            "client.registered", "client.secret_rotated", "user.created", "login.failed", "login.succeeded", "consent.granted",
            "token.issued", "refresh.reuse_detected", "code.replay_detected", "client_authentication.failed", "token.revoked",
        ]
        #expect(expected.subtracting(events).isEmpty, "missing events: \(expected.subtracting(events).sorted())")
        #expect(secrets.values.count >= 14)
    }
}
