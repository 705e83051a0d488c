import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyTestSupport
import Testing

/// The `latchkey` executable as a user runs it.
@Suite("latchkey CLI")
struct CLITests {
    func dataDir() -> String {
        Scratch.path("cli").path
    }

    @Test("users create and set-password apply the password policy, with password-min-length from the environment")
    func passwordPolicy() async throws {
        let store = ["--data-dir", dataDir()]
        let common = try await runLatchkey(["users", "create", "dora", "--password-stdin"] + store, input: "Password123\n")
        #expect(common.status != 0 && common.stderr.contains("most used"), "\(common.stderr)")
        let ownName = try await runLatchkey(["users", "create", "dora", "--password-stdin"] + store, input: "Dora-2025!\n")
        #expect(ownName.status != 0 && ownName.stderr.contains("username"), "\(ownName.stderr)")
        let longer = ["LATCHKEY_PASSWORD_MIN_LENGTH": "15"]
        let short = try await runLatchkey(
            ["users", "create", "dora", "--password-stdin"] + store, input: "battery-staple\n", environment: longer)
        #expect(short.status != 0 && short.stderr.contains("at least 15"), "\(short.stderr)")
        let created = try await runLatchkey(
            ["users", "create", "dora", "--password-stdin"] + store, input: "battery-staple-9\n", environment: longer)
        #expect(created.status == 0, "\(created.stderr)")
        let reset = try await runLatchkey(["users", "set-password", "dora", "--password-stdin"] + store, input: "iloveyou\n")
        #expect(reset.status != 0 && reset.stderr.contains("most used"), "\(reset.stderr)")
    }

    @Test("scopes, users and clients commands with --json; a web secret is printed once and stored hashed")
    func adminCommands() async throws {
        let dir = dataDir()
        let store = ["--data-dir", dir]
        let added = try await runLatchkey(["scopes", "add", "notes.read", "--description", "Read your notes", "--json"] + store)
        #expect(added.status == 0, "\(added.stderr)")
        let scopes = try await runLatchkey(["scopes", "list", "--json"] + store).json["scopes"] as? [[String: String]]
        #expect(scopes?.contains { $0["name"] == "notes.read" } == true)
        #expect(scopes?.contains { $0["name"] == "profile" } == true)

        let user = try await runLatchkey(
            ["users", "create", "bob", "--name", "Bob", "--password-stdin", "--json"] + store, input: "battery-staple\n")
        #expect(user.status == 0, "\(user.stderr)")
        #expect((user.json["user_id"] as? String)?.isEmpty == false)
        #expect(try await runLatchkey(["users", "list", "--json"] + store).stdout.contains("\"bob\""))
        #expect(
            try await runLatchkey(["users", "set-password", "bob", "--password-stdin"] + store, input: "another-pass\n").status
                == 0)

        let native = try await runLatchkey(
            [
                "clients", "create", "--type", "native", "--name", "Notes", "--redirect-uri", "http://127.0.0.1/callback",
                "--scope", "profile", "--scope", "notes.read", "--consent-markdown", "Hello **you**", "--json",
            ] + store)
        #expect(native.status == 0, "\(native.stderr)")
        #expect(native.json["client_secret"] is NSNull)
        let web = try await runLatchkey(
            ["clients", "create", "--type", "web", "--name", "Web", "--redirect-uri", "https://web.example/cb", "--json"] + store)
        let secret = try #require(web.json["client_secret"] as? String)
        #expect(secret.hasPrefix("lk_cs_"))
        let webID = try #require(web.json["client_id"] as? String)
        let shown = try await runLatchkey(["clients", "show", webID, "--json"] + store)
        #expect(shown.status == 0 && !shown.stdout.contains(secret))
        let database = try Data(contentsOf: URL(fileURLWithPath: dir).appendingPathComponent("latchkey.sqlite"))
        #expect(database.range(of: Data(secret.utf8)) == nil)
        #expect(try await runLatchkey(["clients", "list", "--json"] + store).stdout.contains(webID))
        #expect(try await runLatchkey(["clients", "delete", webID] + store).status == 0)
        #expect(try await runLatchkey(["clients", "show", webID] + store).status != 0)
        #expect(try await runLatchkey(["users", "delete", "bob"] + store).status == 0)
    }

    @Test("Mistakes exit non-zero with a sentence a person can act on")
    func mistakes() async throws {
        let store = ["--data-dir", dataDir()]
        let badURI = try await runLatchkey(
            ["clients", "create", "--type", "native", "--name", "X", "--redirect-uri", "myapp:/cb"] + store)
        #expect(badURI.status != 0)
        #expect(badURI.stderr.contains("reverse domain"))
        let badScope = try await runLatchkey(
            ["clients", "create", "--type", "native", "--name", "X", "--redirect-uri", "com.example.x:/cb", "--scope", "nope"]
                + store)
        #expect(badScope.status != 0)
        #expect(badScope.stderr.contains("latchkey scopes add nope"))
        let noStdin = try await runLatchkey(["users", "create", "carol"] + store)
        #expect(noStdin.status != 0)
        #expect(noStdin.stderr.contains("--password-stdin"))
        #expect(try await runLatchkey(["clients", "create", "--type", "robot", "--name", "X"] + store).status != 0)
    }

    @Test("serve --dev: the README's first command signs a user in end to end, admin commands work beside it, SIGTERM stops it")
    func serveDev() async throws {
        let dir = dataDir()
        let port = try freePort()
        let server = try await ServeProcess(["--dev", "--port", "\(port)", "--data-dir", dir])
        try await server.waitFor("Latchkey is serving")
        let output = server.stdout
        func value(after label: String) -> String? {
            output.split(separator: "\n").first { $0.contains(label) }?
                .split(separator: " ", omittingEmptySubsequences: true).drop { !$0.hasSuffix(":") }.dropFirst().first.map(
                    String.init)
        }
        let password = try #require(value(after: "password:"))
        let clientID = try #require(value(after: "client_id:"))

        // The CLI works on the same data while the server runs.
        let listed = try await runLatchkey(["clients", "list", "--json", "--data-dir", dir])
        #expect(listed.status == 0 && listed.stdout.contains(clientID))

        let browser = Browser(port: port)
        let redirectURI = "http://127.0.0.1:9/callback"
        let verifier = CodeVerifier.generate()
        let query = FormParameters([
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", "profile activity"),
            ("state", "s"), ("code_challenge", verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        let login = try await browser.get(try #require(try await browser.get("/oauth2/authorize?" + query).location))
        let consentLocation = try await browser.post(
            "/login",
            form: [
                ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!), ("username", "demo"),
                ("password", password),
            ]
        ).location
        let consent = try await browser.get(try #require(consentLocation))
        let callback = try await browser.post(
            "/oauth2/authorize",
            form: [
                ("csrf_token", consent.field("csrf_token")!), ("request", consent.field("request")!), ("decision", "allow"),
                ("scope", "profile"),
            ]
        ).location
        let code = try #require(callback.flatMap { Fixture.parameter("code", in: $0) })
        let tokens = try await browser.post(
            "/oauth2/token",
            form: [
                ("grant_type", "authorization_code"), ("code", code), ("client_id", clientID), ("redirect_uri", redirectURI),
                ("code_verifier", verifier.value),
            ]
        ).json(TokenResponse.self)
        #expect(tokens.scope == "profile")
        let info = try await browser.get("/userinfo", headers: [.authorization: "Bearer \(tokens.accessToken)"])
        #expect(info.jsonObject["username"] as? String == "demo")
        try await browser.close()

        #expect(try await server.terminate() == 0)
        #expect(!output.contains(tokens.accessToken))
    }
}

@Suite("latchkey CLI: more client types")
struct MoreClientTypesCLITests {
    @Test("browser with --allow-implicit, service without redirect URIs, --owner, rotate-secret")
    func clientTypes() async throws {
        let store = ["--data-dir", Scratch.path("cli").path]
        #expect(
            try await runLatchkey(["users", "create", "alice", "--password-stdin"] + store, input: "correct-horse\n").status == 0)
        let spa = try await runLatchkey(
            [
                "clients", "create", "--type", "browser", "--name", "SPA", "--redirect-uri", "https://spa.example/cb",
                "--allow-implicit", "--json",
            ] + store)
        #expect(spa.status == 0, "\(spa.stderr)")
        #expect(spa.json["allow_implicit"] as? Bool == true && spa.json["client_secret"] is NSNull)
        let service = try await runLatchkey(
            ["clients", "create", "--type", "service", "--name", "Reports", "--scope", "activity", "--json"] + store)
        #expect(service.status == 0, "\(service.stderr)")
        let secret = try #require(service.json["client_secret"] as? String)
        let id = try #require(service.json["client_id"] as? String)
        let rotated = try await runLatchkey(["clients", "rotate-secret", id, "--json"] + store)
        #expect(rotated.status == 0)
        #expect((rotated.json["client_secret"] as? String).map { $0 != secret && $0.hasPrefix("lk_cs_") } == true)
        let personal = try await runLatchkey(
            [
                "clients", "create", "--type", "native", "--name", "Mine", "--redirect-uri", "http://127.0.0.1/callback",
                "--owner", "alice", "--json",
            ] + store)
        #expect(personal.status == 0 && (personal.json["owner_user_id"] as? String)?.isEmpty == false)
        let noOwner = try await runLatchkey(
            [
                "clients", "create", "--type", "native", "--name", "X", "--redirect-uri", "http://127.0.0.1/callback", "--owner",
                "nobody",
            ] + store)
        #expect(noOwner.status != 0 && noOwner.stderr.contains("no user named nobody"))
        let implicitNative = try await runLatchkey(
            [
                "clients", "create", "--type", "native", "--name", "X", "--redirect-uri", "http://127.0.0.1/callback",
                "--allow-implicit",
            ] + store)
        #expect(implicitNative.status != 0 && implicitNative.stderr.contains("only for browser clients"))
        let spaID = try #require(spa.json["client_id"] as? String)
        #expect(try await runLatchkey(["clients", "rotate-secret", spaID] + store).status != 0)
    }
}
