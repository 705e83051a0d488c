import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `latchkey login` and `latchkey token` as processes, with `$BROWSER` a script that signs in.
@Suite("latchkey login and latchkey token")
struct LoginCommandTests {
    /// A stand-in browser (`Tests/Support/browser_sign_in.py`): signs in as demo, allows the
    /// scopes in `LK_GRANT`, follows the redirect to the app.
    static let browserScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/browser_sign_in.py")

    @Test("login signs in through $BROWSER and the loopback receiver; token prints a token /userinfo accepts")
    func loginAndToken() async throws {
        let dir = try Scratch.folder("login")
        let script = Self.browserScript
        let port = try freePort()
        let server = try await ServeProcess(["--dev", "--port", "\(port)", "--data-dir", dir.appendingPathComponent("data").path])
        try await server.waitFor("Latchkey is serving")
        let output = server.stdout
        let password = try #require(output.firstMatch(of: /password:\s+(\S+)/)?.1).description
        let clientID = try #require(output.firstMatch(of: /client_id:\s+(\S+)/)?.1).description
        let issuer = "http://127.0.0.1:\(port)"
        let environment = [
            "BROWSER": "python3 \(script.path)", "LK_PASSWORD": password, "LK_GRANT": "profile",
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]

        let login = try await runLatchkey(
            ["login", "--issuer", issuer, "--client-id", clientID, "--scope", "profile activity", "--timeout", "60"],
            environment: environment)
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("/oauth2/authorize?"), "the URL is printed for another machine")
        #expect(login.stdout.contains("Signed in to \(issuer) as demo"))
        #expect(login.stdout.contains("Granted scopes: profile"))
        #expect(login.stdout.contains("activity was not granted"))
        let credentials = dir.appendingPathComponent("config/latchkey/credentials.json")
        let mode = try FileManager.default.attributesOfItem(atPath: credentials.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)

        let token = try await runLatchkey(["token"], environment: environment)
        #expect(token.status == 0, "\(token.stderr)")
        let accessToken = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(accessToken.hasPrefix("lk_at_"))
        #expect(try await userInfo(issuer: issuer, accessToken) == 200)

        let refreshed = try await runLatchkey(["token", "--refresh", "--json"], environment: environment)
        #expect(refreshed.status == 0, "\(refreshed.stderr)")
        let newToken = try #require(refreshed.json["access_token"] as? String)
        #expect(newToken != accessToken)
        #expect(refreshed.json["scope"] as? String == "profile")
        #expect(try await userInfo(issuer: issuer, newToken) == 200)

        // Revoked: the client is deleted on the server; token says to sign in again.
        #expect(
            try await runLatchkey(["clients", "delete", clientID, "--data-dir", dir.appendingPathComponent("data").path]).status
                == 0)
        let revoked = try await runLatchkey(["token", "--refresh"], environment: environment)
        #expect(revoked.status != 0)
        #expect(revoked.stderr.contains("latchkey login"))
        #expect(try await server.terminate() == 0)
    }

    @Test("login --resource asks for a token for that resource: a JWT whose aud names it")
    func loginForAResource() async throws {
        let dir = try Scratch.folder("login")
        let script = Self.browserScript
        let data = dir.appendingPathComponent("data").path
        let resource = "http://127.0.0.1:9/mcp"
        #expect(
            try await runLatchkey([
                "resources", "add", resource, "--name", "Tools", "--scope", "profile", "--token-format", "jwt", "--data-dir",
                data,
            ]).status == 0)
        let port = try freePort()
        let server = try await ServeProcess(["--dev", "--port", "\(port)", "--data-dir", data])
        try await server.waitFor("Latchkey is serving")
        let output = server.stdout
        let password = try #require(output.firstMatch(of: /password:\s+(\S+)/)?.1).description
        let clientID = try #require(output.firstMatch(of: /client_id:\s+(\S+)/)?.1).description
        let environment = [
            "BROWSER": "python3 \(script.path)", "LK_PASSWORD": password,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
        let bad = try await runLatchkey(
            ["login", "--issuer", "http://127.0.0.1:\(port)", "--client-id", clientID, "--resource", "https://a.example/#f"],
            environment: environment)
        #expect(bad.status != 0 && bad.stderr.contains("--resource"))
        let login = try await runLatchkey(
            [
                "login", "--issuer", "http://127.0.0.1:\(port)", "--client-id", clientID, "--scope", "profile", "--resource",
                resource, "--timeout", "60",
            ], environment: environment)
        #expect(login.status == 0, "\(login.stderr)")
        let token = try await runLatchkey(["token"], environment: environment).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let payload = try #require(token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode($0) })
        let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect(claims["aud"] as? String == resource && claims["client_id"] as? String == clientID)
        #expect(try await server.terminate() == 0)
    }

    @Test("token with nothing stored says how to sign in")
    func nothingStored() async throws {
        let dir = Scratch.path("empty")
        let result = try await runLatchkey(["token"], environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("latchkey login --issuer"))
    }

    func userInfo(issuer: String, _ token: String) async throws -> Int {
        var request = URLRequest(url: URL(string: issuer + "/userinfo")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
