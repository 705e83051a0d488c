import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyHTTP
import LatchkeyServer
import LatchkeyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Section W of docs/threat-model.md where it needs the HTTP layer: the sign-in page and the
/// document fetcher.
@Suite("Seams over HTTP: the sign-in page, the document fetcher")
struct SeamHTTPTests {
    @Test("RV22 The sign-in page marks an app this server has not verified, as the consent page does")
    func signInPageMarksUnverifiedApps() async throws {
        try await withLiveServer(configure: { $0.dynamicRegistration.mode = .open }) { fixture, browser in
            let registered = try await fixture.server.registration.register(
                Array(DynamicRegistrationBody.native.utf8), authorization: nil, clientAddress: "192.0.2.7")
            let json = try #require(registered.json)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let selfRegistered = try #require(object["client_id"] as? String)
            for (clientID, redirect, unverified) in [
                (selfRegistered, "http://127.0.0.1:33418/callback", true),
                (fixture.native.id.rawValue, "http://127.0.0.1:5000/callback", false),
            ] {
                let query = FormParameters([
                    ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirect), ("scope", "openid"),
                    ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
                ]).encoded
                let start = try await Browser(port: browser.port).get("/oauth2/authorize?" + query)
                let login = try #require(start.location)
                let page = try await Browser(port: browser.port).get(login)
                #expect(page.body.contains("Not verified by this server") == unverified, "\(clientID)")
            }
        }
    }

    @Test("RV22 Document fetches beyond the limit are refused at once, not queued")
    func fetchesAreBounded() async throws {
        // A listener that accepts connections into its backlog and never answers: a fetch from it
        // waits for the whole timeout.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(listen(listener, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        var fetcher = GuardedDocumentFetcher(allowLoopback: true)
        fetcher.timeout = .seconds(5)
        fetcher.maximumConcurrentFetches = 1
        let url = URL(string: "https://127.0.0.1:\(port)/client.json")!
        let slow = Task { () -> String in
            do { _ = try await fetcher.fetch(url) } catch { return String(describing: error) }
            return "fetched"
        }
        // The first fetch holds the slot once its connection reaches the listener's backlog (a
        // fixed sleep was not enough with the whole suite running on two cores).
        var pending = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(60)
        while poll(&pending, 1, 0) == 0, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(pending.revents & Int16(POLLIN) != 0, "the first fetch connects")
        let started = Date()
        do {
            _ = try await fetcher.fetch(url)
            Issue.record("a second fetch should be refused while the first holds the only slot")
        } catch {
            #expect(String(describing: error).contains("too many"))
            #expect(Date().timeIntervalSince(started) < 2.5, "refused at once, not after the first fetch's timeout")
        }
        #expect(await slow.value.contains("took too long"))
        // The slot is free again.
        do { _ = try await fetcher.fetch(url) } catch { #expect(String(describing: error).contains("took too long")) }
    }
}

@Suite("RV22 The database password from the environment or a file")
struct DatabasePasswordTests {
    @Test(
        "database-url without a password, the password from LATCHKEY_DATABASE_PASSWORD or database-password-file; never both",
        .enabled(if: TestStores.postgresURL != nil, "needs LATCHKEY_TEST_DATABASE_URL (scripts/test)"))
    func passwordOutsideTheURL() async throws {
        let url = try await TestStores.newDatabaseURL()
        let key = Scratch.path("kek")
        try Data(KeyEncryptionKey.generate().text.utf8).write(to: key)
        let store = ["--database-url", url, "--key-encryption-key-file", key.path]
        // The test cluster trusts loopback, so any password opens it: what is checked here is that
        // the settings combine, and refuse what cannot be meant.
        let fromEnvironment = try await runLatchkey(
            ["scopes", "list", "--json"] + store, environment: ["LATCHKEY_DATABASE_PASSWORD": "s3cret:/@x"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let file = Scratch.path("database-password")
        try Data("s3cret\n".utf8).write(to: file)
        let fromFile = try await runLatchkey(["scopes", "list", "--json", "--database-password-file", file.path] + store)
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let unreadable = try await runLatchkey(["scopes", "list", "--database-password-file", "/nonexistent/pw"] + store)
        #expect(unreadable.status != 0 && unreadable.stderr.contains("cannot be read"))
        var withPassword = try #require(URLComponents(string: url))
        withPassword.password = "inline"
        let both = try await runLatchkey(
            ["scopes", "list", "--database-url", withPassword.string!, "--key-encryption-key-file", key.path],
            environment: ["LATCHKEY_DATABASE_PASSWORD": "other"])
        #expect(both.status != 0 && both.stderr.contains("not both"))
        // Not a flag: a password given on the command line would be in the process list.
        let asFlag = try await runLatchkey(["serve", "--database-password", "x"] + store)
        #expect(asFlag.status != 0)
    }
}
