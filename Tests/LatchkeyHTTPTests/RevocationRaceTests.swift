import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyTestSupport
import Testing

/// RV1 (docs/threat-model.md): a refresh racing a revocation never escapes it. Two `latchkey
/// serve` processes share one PostgreSQL database; on A a client refreshes in a loop, always with
/// its newest refresh token, while the grant is revoked through B (or the CLI, a third process on
/// the same database) by each path that revokes. No refresh that started after the revocation
/// answered may succeed, and the last access token the loop got must be dead.
/// ``CodeRevocationRaceTests`` races the issuing of codes against the revocation the same way.
///
/// Each suite runs its cases one after another, and the two suites run beside each other: a trial
/// keeps about one of two cores busy, so as one suite they ran alone through the last minute of
/// `swift test`.
@Suite("RV1 Revocation wins every race with a refresh, two instances on one PostgreSQL", .serialized)
struct RevocationRaceTests {
    enum Path: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case revokeEndpoint, reuseDetection, codeReplay, disable, delete, passwordChange, disconnect, adminAPIRevoke
        var testDescription: String { rawValue }
    }

    static let trials = 12

    @Test(
        "Refreshes looping on A while B revokes: none that started after the revocation answered succeeds",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test)"),
        arguments: Path.allCases)
    func race(path: Path) async throws {
        // Strict rotation: presenting a rotated refresh token is reuse at once.
        try await Self.trials(extra: ["--refresh-grace-period", "0"], path: path) { race in try await race.run(path) }
    }

    /// Starts A and B on one new PostgreSQL database, runs `trial` ``trials`` times, and expects
    /// nothing to have escaped in any of them.
    static func trials(
        extra: [String] = [], path: Path, _ trial: (Race) async throws -> String
    ) async throws {
        let deployment = try await Deployment.make(.postgres)
        let admin = try await runLatchkey(
            ["clients", "create", "--type", "service", "--name", "Automation", "--scope", "latchkey:admin", "--json"]
                + deployment.store)
        let adminClient = (admin.json["client_id"] as? String ?? "", admin.json["client_secret"] as? String ?? "")
        let (portA, portB) = (try freePort(), try freePort())
        let issuer = "http://127.0.0.1:\(portA)"
        let a = try await deployment.start(port: portA, issuer: issuer, extra: extra)
        let b = try await deployment.start(port: portB, issuer: issuer, extra: extra)
        let race = Race(deployment: deployment, portA: portA, portB: portB, admin: adminClient)
        var escaped: [String] = []
        for number in 0..<trials {
            let outcome = try await trial(race)
            if !outcome.isEmpty { escaped.append("trial \(number): \(outcome)") }
        }
        #expect(escaped.isEmpty, "\(path): \(escaped.joined(separator: "; "))")
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}

/// RV23 (docs/threat-model.md): the same browser session asks A for codes in a loop (consent
/// given, so each request answers with a code at once) while B revokes alice's access. Every code
/// issued for a request that started before the revocation answered must be refused at the
/// exchange: one stored in the very moment of the revocation once survived it.
@Suite("RV23 Revocation wins every race with a code, two instances on one PostgreSQL", .serialized)
struct CodeRevocationRaceTests {
    @Test(
        "Codes issued on A while B revokes the user's access: none asked for before the revocation answered is redeemable",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test)"),
        arguments: [RevocationRaceTests.Path.disable, .passwordChange, .disconnect])
    func codeRace(path: RevocationRaceTests.Path) async throws {
        try await RevocationRaceTests.trials(path: path) { race in try await race.runCodes(path) }
    }
}

/// One deployment's race, run again for each trial.
struct Race {
    let deployment: Deployment
    let portA: Int
    let portB: Int
    let admin: (String, String)

    /// Runs one trial; returns what escaped the revocation (empty when nothing did).
    func run(_ path: RevocationRaceTests.Path) async throws -> String {
        let (code, browser) = try await deployment.code(port: portB)
        defer { Task { try? await browser.close() } }
        let (status, tokens) = try await deployment.exchange(code, on: portA)
        guard status == 200, let first = tokens["refresh_token"] as? String else {
            throw FixtureError("the exchange answered \(status)")
        }
        let log = RefreshLog(first: first)
        let loop = Task { try await refreshUntilStopped(log) }
        // A few refreshes first, so the original token is rotated (reuse detection needs that) and
        // the loop is in full swing when the revocation comes.
        while await log.successes < 3 {
            guard await log.failures == 0 else { throw FixtureError("a refresh failed before any revocation") }
            try await Task.sleep(for: .milliseconds(2))
        }
        try await revoke(path, code: code, firstRefresh: first, browser: browser)
        let answered = Date()
        await log.revoked(at: answered)
        // Let the loop try on for a while after the answer.
        while await log.attemptsAfterRevocation < 10 { try await Task.sleep(for: .milliseconds(5)) }
        loop.cancel()
        _ = try? await loop.value

        var escaped: [String] = []
        let late = await log.successesStartedAfterRevocation
        if late > 0 { escaped.append("\(late) refreshes that started after the revocation succeeded") }
        if let access = await log.lastAccessToken, try await deployment.introspect(access, on: portB) {
            escaped.append("the last access token is still active")
        }
        try await restore(path)
        return escaped.joined(separator: ", ")
    }

    /// Runs one trial of RV23's race; returns what escaped the revocation (empty when nothing did).
    func runCodes(_ path: RevocationRaceTests.Path) async throws -> String {
        let (first, browser) = try await deployment.code(port: portB)
        defer { Task { try? await browser.close() } }
        let onA = Browser(port: portA)
        defer { Task { try? await onA.close() } }
        await onA.adopt(await browser.cookies)
        let log = CodeLog()
        let loop = Task {
            while !Task.isCancelled {
                let started = Date()
                let page = try await onA.get(deployment.authorizePath())
                await log.record(started: started, code: page.location.flatMap { Fixture.parameter("code", in: $0) })
            }
        }
        let start = Date()
        while await log.issued < 3 {
            guard Date().timeIntervalSince(start) < 10 else { throw FixtureError("the loop on A got no codes") }
            try await Task.sleep(for: .milliseconds(2))
        }
        try await revoke(path, code: first, firstRefresh: "", browser: browser)
        let answered = Date()
        await log.revoked(at: answered)
        let deadline = Date().addingTimeInterval(10)
        while await log.attemptsAfterRevocation < 5, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        loop.cancel()
        _ = try? await loop.value

        var redeemed = 0
        let codes = [first] + (await log.codes(startedBefore: answered))
        for code in codes where try await deployment.exchange(code, on: portA).0 == 200 { redeemed += 1 }
        try await restore(path)
        return redeemed == 0 ? "" : "\(redeemed) of \(codes.count) codes asked for before the revocation answered were redeemed"
    }

    private func refreshUntilStopped(_ log: RefreshLog) async throws {
        while !Task.isCancelled {
            let token = await log.current
            let started = Date()
            let (status, object) = try await postForm(
                "http://127.0.0.1:\(portA)/oauth2/token",
                [("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", deployment.clientID)])
            await log.record(
                started: started, status: status, refresh: object["refresh_token"] as? String,
                access: object["access_token"] as? String)
        }
    }

    private func revoke(_ path: RevocationRaceTests.Path, code: String, firstRefresh: String, browser: Browser) async throws {
        let b = "http://127.0.0.1:\(portB)"
        switch path {
        case .revokeEndpoint:
            let (status, _) = try await postForm(
                b + "/oauth2/revoke", [("token", firstRefresh), ("client_id", deployment.clientID)])
            guard status == 200 else { throw FixtureError("revoke answered \(status)") }
        case .reuseDetection:
            let (status, _) = try await postForm(
                b + "/oauth2/token",
                [("grant_type", "refresh_token"), ("refresh_token", firstRefresh), ("client_id", deployment.clientID)])
            guard status == 400 else { throw FixtureError("reuse answered \(status)") }
        case .codeReplay:
            let (status, _) = try await deployment.exchange(code, on: portB)
            guard status == 400 else { throw FixtureError("the replayed code answered \(status)") }
        case .disable:
            let (status, _) = try await adminAPI(.patch, "/admin/api/users/\(try await aliceID())", json: #"{"disabled":true}"#)
            guard status == 200 else { throw FixtureError("PATCH disabled answered \(status)") }
        case .delete:
            try await cli(["users", "delete", "alice"])
        case .passwordChange:
            try await cli(["users", "set-password", "alice", "--password-stdin"], input: "correct-horse\n")
        case .disconnect:
            let account = try await browser.get("/account")
            guard let csrf = account.field("csrf_token") else { throw FixtureError("no CSRF token on /account") }
            let page = try await browser.post(
                "/account/revoke", form: [("csrf_token", csrf), ("client_id", deployment.clientID)])
            guard page.status == .seeOther || page.status == .found else {
                throw FixtureError("disconnect answered \(page.status)")
            }
        case .adminAPIRevoke:
            let query = "user_id=\(try await aliceID())&client_id=\(deployment.clientID)"
            let (status, _) = try await adminAPI(.delete, "/admin/api/grants?" + query)
            guard (200..<300).contains(status) else { throw FixtureError("DELETE grants answered \(status)") }
        }
    }

    /// Puts alice back as she was for the next trial.
    private func restore(_ path: RevocationRaceTests.Path) async throws {
        switch path {
        case .disable:
            let (status, _) = try await adminAPI(.patch, "/admin/api/users/\(try await aliceID())", json: #"{"disabled":false}"#)
            guard status == 200 else { throw FixtureError("PATCH enabled answered \(status)") }
        case .delete:
            try await cli(["users", "create", "alice", "--password-stdin"], input: "correct-horse\n")
        default: break
        }
    }

    private func cli(_ arguments: [String], input: String? = nil) async throws {
        let result = try await runLatchkey(arguments + deployment.store, input: input)
        guard result.status == 0 else { throw FixtureError("latchkey \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    private func aliceID() async throws -> String {
        let (status, object) = try await adminAPI(.get, "/admin/api/users")
        let users = object["users"] as? [[String: Any]] ?? []
        guard status == 200, let id = users.first(where: { $0["username"] as? String == "alice" })?["user_id"] as? String else {
            throw FixtureError("alice not found in the admin API (\(status))")
        }
        return id
    }

    /// A call to the admin API on B with a fresh `latchkey:admin` token.
    private func adminAPI(_ method: HTTPRequest.Method, _ path: String, json: String? = nil) async throws
        -> (Int, [String: Any])
    {
        let (status, token) = try await postForm(
            "http://127.0.0.1:\(portB)/oauth2/token", [("grant_type", "client_credentials"), ("scope", "latchkey:admin")],
            basic: admin)
        guard status == 200, let access = token["access_token"] as? String else {
            throw FixtureError("no admin token (\(status))")
        }
        let browser = Browser(port: portB)
        defer { Task { try? await browser.close() } }
        let page = try await browser.send(method, path, json: json, headers: [.authorization: "Bearer " + access])
        return (Int(page.status.code), page.jsonObject)
    }
}

/// What the refresh loop saw, against the moment the revocation answered.
actor RefreshLog {
    private(set) var current: String
    private(set) var lastAccessToken: String?
    private(set) var successes = 0
    private(set) var failures = 0
    private(set) var attemptsAfterRevocation = 0
    private(set) var successesStartedAfterRevocation = 0
    private var revokedAt: Date?

    init(first: String) { current = first }

    func revoked(at time: Date) { revokedAt = time }

    func record(started: Date, status: Int, refresh: String?, access: String?) {
        let afterRevocation = revokedAt.map { started > $0 } ?? false
        if afterRevocation { attemptsAfterRevocation += 1 }
        guard status == 200, let refresh else {
            failures += 1
            return
        }
        successes += 1
        current = refresh
        lastAccessToken = access
        if afterRevocation { successesStartedAfterRevocation += 1 }
    }
}

/// The codes the authorization loop got, against the moment the revocation answered.
actor CodeLog {
    private var all: [(started: Date, code: String)] = []
    private(set) var attemptsAfterRevocation = 0
    private var revokedAt: Date?

    var issued: Int { all.count }

    func revoked(at time: Date) { revokedAt = time }

    func record(started: Date, code: String?) {
        if let revokedAt, started > revokedAt { attemptsAfterRevocation += 1 }
        if let code { all.append((started, code)) }
    }

    func codes(startedBefore time: Date) -> [String] { all.filter { $0.started < time }.map(\.code) }
}
