import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A POST with a form body over real HTTP on a fresh connection; returns the status and the JSON object.
func postForm(_ url: String, _ form: [(String, String)], basic: (String, String)? = nil) async throws -> (Int, [String: Any]) {
    guard let components = URLComponents(string: url), let port = components.port else {
        throw FixtureError("bad URL \(url)")
    }
    let browser = Browser(port: port)
    var headers: HTTPFields = [:]
    if let (id, secret) = basic {
        headers[.authorization] = "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
    }
    do {
        let page = try await browser.post(components.path, form: form, headers: headers)
        try await browser.close()
        return (Int(page.status.code), page.jsonObject)
    } catch {
        try? await browser.close()
        throw error
    }
}

/// Servers as separate `latchkey serve` processes over one store, with a user, a native app and a
/// service (the resource server) registered through the CLI.
struct Deployment {
    let store: [String]
    let clientID: String
    let service: (String, String)

    static func make(_ kind: StoreKind) async throws -> Deployment {
        let store: [String]
        switch kind {
        case .sqlite:
            store = [
                "--data-dir",
                Scratch.path("deployment").path,
            ]
        case .postgres:
            // Every instance of a deployment shares the key that seals the signing keys.
            let keyFile = Scratch.path("kek")
            try Data(KeyEncryptionKey.generate().text.utf8).write(to: keyFile)
            store = ["--database-url", try await TestStores.newDatabaseURL(), "--key-encryption-key-file", keyFile.path]
        }
        guard
            try await runLatchkey(["users", "create", "alice", "--password-stdin"] + store, input: "correct-horse\n").status == 0
        else {
            throw FixtureError("users create failed")
        }
        let native = try await runLatchkey(
            [
                "clients", "create", "--type", "native", "--name", "Notes", "--redirect-uri", "http://127.0.0.1/callback",
                "--scope", "profile", "--scope", "openid", "--json",
            ] + store)
        let service = try await runLatchkey(
            ["clients", "create", "--type", "service", "--name", "RS", "--scope", "activity", "--json"] + store)
        guard let clientID = native.json["client_id"] as? String, let serviceID = service.json["client_id"] as? String,
            let secret = service.json["client_secret"] as? String
        else { throw FixtureError("clients create failed: \(native.stderr) \(service.stderr)") }
        return Deployment(store: store, clientID: clientID, service: (serviceID, secret))
    }

    /// Starts an instance; all instances share `issuer`.
    func start(port: Int, issuer: String, extra: [String] = []) async throws -> ServeProcess {
        let process = try await ServeProcess(["--port", "\(port)", "--issuer", issuer] + store + extra)
        try await process.waitFor("Latchkey is serving")
        return process
    }

    /// The authorization request (code flow with PKCE) of the deployment's client.
    func authorizePath(redirect: String = "http://127.0.0.1:7000/callback", scope: String = "profile") -> String {
        "/oauth2/authorize?"
            + FormParameters([
                ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirect), ("scope", scope),
                ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]).encoded
    }

    /// Signs alice in on `port` and returns a code for `redirect`, with the browser used.
    func code(
        port: Int, browser: Browser? = nil, redirect: String = "http://127.0.0.1:7000/callback", scope: String = "profile"
    ) async throws -> (String, Browser) {
        let browser = browser ?? Browser(port: port)
        var page = try await browser.get(authorizePath(redirect: redirect, scope: scope))
        if let login = page.location, login.hasPrefix("/login") {
            let form = try await browser.get(login)
            page = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", form.field("csrf_token")!), ("request", form.field("request")!),
                    ("username", "alice"), ("password", "correct-horse"),
                ])
            page = try await browser.get(page.location!)
        }
        if page.status == .ok {
            page = try await browser.post(
                "/oauth2/authorize",
                form: [
                    ("csrf_token", page.field("csrf_token")!), ("request", page.field("request")!),
                    ("decision", "allow"),
                ] + scope.split(separator: " ").map { ("scope", String($0)) })
        }
        guard let location = page.location, let code = Fixture.parameter("code", in: location) else {
            throw FixtureError("no code: \(page.status) \(page.body.prefix(300))")
        }
        return (code, browser)
    }

    func exchange(_ code: String, on port: Int, redirect: String = "http://127.0.0.1:7000/callback") async throws -> (
        Int, [String: Any]
    ) {
        try await postForm(
            "http://127.0.0.1:\(port)/oauth2/token",
            [
                ("grant_type", "authorization_code"), ("code", code), ("client_id", clientID), ("redirect_uri", redirect),
                ("code_verifier", Fixture.verifier.value),
            ])
    }

    func introspect(_ token: String, on port: Int) async throws -> Bool {
        let (status, object) = try await postForm(
            "http://127.0.0.1:\(port)/oauth2/introspect", [("token", token)], basic: service)
        guard status == 200 else { throw FixtureError("introspection answered \(status)") }
        return object["active"] as? Bool == true
    }
}

@Suite("Several instances, races and crashes", .serialized)
struct MultiInstanceTests {
    @Test(
        "Key rotation across two instances: a relying party's cached key set verifies what is signed after the rotation, and a refetch finds the new key",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test)"))
    func keyRotation() async throws {
        let deployment = try await Deployment.make(.postgres)
        let (portA, portB) = (try freePort(), try freePort())
        let issuer = "http://127.0.0.1:\(portA)"
        var a = try await deployment.start(port: portA, issuer: issuer)
        let b = try await deployment.start(port: portB, issuer: issuer)
        func keySet(_ port: Int) async throws -> PublicKeySet {
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/oauth2/jwks")!)
            return try await PublicKeySet.parse(data)
        }
        func idToken(signedOn port: Int) async throws -> String {
            let (code, browser) = try await deployment.code(port: port, scope: "openid profile")
            try await browser.close()
            let (status, tokens) = try await deployment.exchange(code, on: port)
            #expect(status == 200)
            return try #require(tokens["id_token"] as? String)
        }
        let cached = try await keySet(portB)
        let allowed: Set = ["RS256"]
        let before = try await idToken(signedOn: portA)
        #expect((try? await cached.verify(before, as: IDTokenClaims.self, allowed: allowed).get()) != nil)

        let lead = 3
        let rotated = try await runLatchkey(["keys", "rotate", "--lead-time", "\(lead)", "--json"] + deployment.store)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        // Published at once by both instances, but not yet used: the cached set still verifies.
        #expect(try await keySet(portA).algorithms.count == 4)
        let during = try await idToken(signedOn: portB)
        #expect(JWSHeader(during)?.kid == JWSHeader(before)?.kid)
        #expect((try? await cached.verify(during, as: IDTokenClaims.self, allowed: allowed).get()) != nil)

        // After the lead time a restarted instance signs with the new key: unknown to the cached
        // set, found by fetching the set again from the other instance.
        try await Task.sleep(for: .seconds(lead + 1))
        #expect(try await a.terminate() == 0)
        a = try await deployment.start(port: portA, issuer: issuer)
        let after = try await idToken(signedOn: portA)
        #expect(JWSHeader(after)?.kid != JWSHeader(before)?.kid)
        guard case .failure(.unknownKey) = await cached.verify(after, as: IDTokenClaims.self, allowed: allowed) else {
            Issue.record("the cached set should not know the new key")
            return
        }
        #expect((try? await keySet(portB).verify(after, as: IDTokenClaims.self, allowed: allowed).get()) != nil)
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }

    @Test(
        "Two instances on one PostgreSQL act as one server: sign in on A, exchange on B, refresh on A, revoke on B",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test)"))
    func twoInstances() async throws {
        let deployment = try await Deployment.make(.postgres)
        let (portA, portB) = (try freePort(), try freePort())
        let issuer = "http://127.0.0.1:\(portA)"
        let a = try await deployment.start(port: portA, issuer: issuer)
        let b = try await deployment.start(port: portB, issuer: issuer)
        let (code, browserA) = try await deployment.code(port: portA)
        let (status, tokens) = try await deployment.exchange(code, on: portB)
        #expect(status == 200)
        let refresh = try #require(tokens["refresh_token"] as? String)
        let (refreshed, next) = try await postForm(
            "http://127.0.0.1:\(portA)/oauth2/token",
            [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", deployment.clientID)])
        #expect(refreshed == 200)
        let access = try #require(next["access_token"] as? String)
        #expect(try await deployment.introspect(access, on: portB))
        let (revoked, _) = try await postForm(
            "http://127.0.0.1:\(portB)/oauth2/revoke",
            [("token", next["refresh_token"] as! String), ("client_id", deployment.clientID)])
        #expect(revoked == 200)
        #expect(try await !deployment.introspect(access, on: portA))

        // The browser session made on A is known to B: consent is remembered, a code comes back at once.
        let cookies = await browserA.cookies
        let browserB = Browser(port: portB)
        let query = FormParameters([
            ("response_type", "code"), ("client_id", deployment.clientID), ("redirect_uri", "http://127.0.0.1:7000/callback"),
            ("scope", "profile"), ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        let again = try await browserB.get(
            "/oauth2/authorize?" + query, headers: [.cookie: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")])
        #expect(again.location.flatMap { Fixture.parameter("code", in: $0) } != nil)
        try await browserA.close()
        try await browserB.close()
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }

    @Test("T10 Racing redemptions of one code over HTTP: exactly one succeeds, no 5xx", arguments: TestStores.kinds)
    func racingRedemptions(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let ports = [try freePort(), try freePort()]
        let issuer = "http://127.0.0.1:\(ports[0])"
        // Two instances on PostgreSQL; SQLite is one instance (one writer per file).
        var servers = [try await deployment.start(port: ports[0], issuer: issuer)]
        if kind == .postgres { servers.append(try await deployment.start(port: ports[1], issuer: issuer)) }
        var browser: Browser?
        for round in 0..<5 {
            let (code, used) = try await deployment.code(port: ports[0], browser: browser)
            browser = used
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    let port = ports[index % servers.count]
                    group.addTask { try await deployment.exchange(code, on: port).0 }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1, "round \(round): \(statuses)")
            #expect(statuses.filter { $0 >= 500 }.isEmpty, "round \(round): \(statuses)")
            #expect(statuses.filter { $0 == 400 }.count == 19)
        }
        try await browser?.close()
        for server in servers { #expect(try await server.terminate() == 0) }
    }

    @Test(
        "T44 Racing refreshes with one token over HTTP (strict rotation): one pair, no 5xx, no live chain left twice",
        arguments: TestStores.kinds)
    func racingRefreshes(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let ports = [try freePort(), try freePort()]
        let issuer = "http://127.0.0.1:\(ports[0])"
        var servers = [try await deployment.start(port: ports[0], issuer: issuer, extra: ["--refresh-grace-period", "0"])]
        if kind == .postgres {
            servers.append(try await deployment.start(port: ports[1], issuer: issuer, extra: ["--refresh-grace-period", "0"]))
        }
        let (code, browser) = try await deployment.code(port: ports[0])
        let refresh = try #require(try await deployment.exchange(code, on: ports[0]).1["refresh_token"] as? String)
        let results = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<10 {
                let port = ports[index % servers.count]
                group.addTask {
                    let (status, object) = try await postForm(
                        "http://127.0.0.1:\(port)/oauth2/token",
                        [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", deployment.clientID)])
                    return (status, object["access_token"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
        }
        #expect(results.filter { $0.0 == 200 }.count == 1, "\(results.map(\.0))")
        #expect(results.filter { $0.0 >= 500 }.isEmpty)
        // The losers' presentations were reuse: the whole family is revoked, so nothing stays live.
        for case (200, let token?) in results { #expect(try await !deployment.introspect(token, on: ports[0])) }
        try await browser.close()
        for server in servers { #expect(try await server.terminate() == 0) }
    }

    @Test("R1 I3 kill -9 during a token load loses no token already returned", arguments: TestStores.kinds)
    func sigkill(kind: StoreKind) async throws {
        let deployment = try await Deployment.make(kind)
        let port = try freePort()
        let issuer = "http://127.0.0.1:\(port)"
        let server = try await deployment.start(port: port, issuer: issuer)
        let received = ReceivedTokens()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        while !Task.isCancelled {
                            guard
                                let (status, object) = try? await postForm(
                                    "http://127.0.0.1:\(port)/oauth2/token", [("grant_type", "client_credentials")],
                                    basic: deployment.service),
                                status == 200, let token = object["access_token"] as? String
                            else { return }
                            await received.add(token)
                        }
                    }
                }
            }
        }
        let deadline = Date().addingTimeInterval(60)
        while await received.count < 200 {
            guard Date() < deadline else {
                load.cancel()
                Issue.record("the token load never reached 200 tokens")
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(server.processIdentifier, SIGKILL)
        await load.value
        try await server.waitUntilExit()
        let tokens = await received.all
        let restarted = try await deployment.start(port: port, issuer: issuer)
        var inactive = 0
        for token in tokens where try await !deployment.introspect(token, on: port) { inactive += 1 }
        #expect(inactive == 0, "\(inactive) of \(tokens.count) returned tokens were lost")
        #expect(try await restarted.terminate() == 0)
    }

    /// Stops the shared test PostgreSQL for a while, so scripts/test runs it on its own, after the
    /// other suites (LATCHKEY_TEST_PG_CTL is set only for that run).
    @Test(
        "R4 I5 With PostgreSQL down requests get a clean 503 (an HTML page on pages), and service resumes when it is back",
        .enabled(
            if: ProcessInfo.processInfo.environment["LATCHKEY_TEST_PG_CTL"] != nil,
            "run alone by scripts/test, which sets LATCHKEY_TEST_PG_CTL"))
    func databaseRestart() async throws {
        let pgCtl = try #require(ProcessInfo.processInfo.environment["LATCHKEY_TEST_PG_CTL"])
        let deployment = try await Deployment.make(.postgres)
        let port = try freePort()
        let server = try await deployment.start(port: port, issuer: "http://127.0.0.1:\(port)")
        let url = "http://127.0.0.1:\(port)/oauth2/token"
        #expect(try await postForm(url, [("grant_type", "client_credentials")], basic: deployment.service).0 == 200)
        let probe = Browser(port: port)
        #expect(try await probe.get("/readyz").status == .ok)
        #expect(shell(pgCtl + " -m fast stop") == 0)
        do {
            let started = Date()
            let (status, object) = try await postForm(url, [("grant_type", "client_credentials")], basic: deployment.service)
            #expect(status == 503)  // with Retry-After: 5
            #expect(object["error"] as? String == "temporarily_unavailable")
            #expect(Date().timeIntervalSince(started) < 15, "no hang")
            let (introspection, body) = try await postForm(
                "http://127.0.0.1:\(port)/oauth2/introspect", [("token", "x")], basic: deployment.service)
            #expect(introspection == 503 && body["active"] == nil, "never active:false or invalid_client while down")
            // A person's page answers a page, not JSON.
            let page = try await Browser(port: port).get("/login")
            #expect(page.status == .serviceUnavailable)
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(page.headers[.retryAfter] == "5" && page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.body.contains("unavailable for a moment") && !page.body.contains("temporarily_unavailable"))
            // Readiness says so too, while liveness stays up: the process is fine, its store is not.
            let ready = try await probe.get("/readyz")
            #expect(ready.status == .serviceUnavailable && ready.headers[.retryAfter] == "5")
            #expect(try await probe.get("/healthz").status == .ok)
        }
        #expect(shell(pgCtl + " start") == 0)
        var recovered = false
        for _ in 0..<60 where !recovered {
            recovered = (try? await postForm(url, [("grant_type", "client_credentials")], basic: deployment.service).0) == 200
            if !recovered { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(recovered, "service resumed by itself")
        #expect(try await probe.get("/readyz").status == .ok, "ready again")
        try await probe.close()
        #expect(try await server.terminate() == 0)
    }

    /// Runs a shell command and waits for it. `system` rather than `Process`: the PostgreSQL daemon
    /// that `pg_ctl start` leaves behind inherits the descriptor `Process` watches, so
    /// `waitUntilExit` would wait for the daemon.
    func shell(_ command: String) -> Int32 {
        let status = system(command + " >/dev/null 2>&1 </dev/null")
        return status == -1 ? -1 : (status >> 8) & 0xFF
    }
}

actor ReceivedTokens {
    private(set) var all: [String] = []
    /// The last answer that held no token, for the message of a load that stalls.
    private(set) var lastRefusal: String?
    var count: Int { all.count }
    func add(_ token: String) { all.append(token) }
    func refused(_ answer: String) { lastRefusal = answer }
}
