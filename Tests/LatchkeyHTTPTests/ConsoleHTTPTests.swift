import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The admin console over real HTTP: sign-in and return, 403 for others, CSRF, re-authentication,
/// no open redirect, headers, and a store outage answered with a page.
@Suite("Admin console over HTTP")
struct ConsoleHTTPTests {
    /// Signs `browser` in through the console's own sign-in (`/admin` → `/login?next=/admin`).
    func signIn(_ browser: Browser, as username: String = "alice", password: String = Fixture.password) async throws {
        let start = try await browser.get("/admin")
        #expect(start.status == .seeOther && start.location == "/login?next=%2Fadmin")
        let login = try await browser.get(start.location!)
        #expect(login.field("next") == "/admin")
        let done = try await browser.post(
            "/login",
            form: [
                ("csrf_token", login.field("csrf_token")!), ("username", username), ("password", password), ("next", "/admin"),
            ])
        #expect(done.status == .seeOther && done.location == "/admin", "back to the console")
    }

    @Test("AD1 T58 An administrator's console; another user gets 403; pages carry the framing and caching headers")
    func access() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            let apps = try await browser.get("/admin")
            #expect(apps.status == .ok && apps.body.contains(fixture.native.name))
            #expect(apps.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(apps.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(apps.headers[.cacheControl] == "no-store")
            for path in ["/admin/users", "/admin/scopes", "/admin/apps/new", "/admin/apps/\(fixture.native.id)"] {
                #expect(try await browser.get(path).status == .ok, "\(path)")
            }
            let other = Browser(port: browser.port)
            try await signIn(other, as: "bob", password: "battery-staple")
            for path in ["/admin", "/admin/users", "/admin/scopes", "/admin/apps/\(fixture.native.id)"] {
                #expect(try await other.get(path).status == .forbidden, "\(path)")
            }
            try await other.close()
        }
    }

    @Test("AD2 Console forms need the session's CSRF token: without it nothing changes")
    func csrf() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            let forged = [
                (
                    "/admin/apps",
                    [("application_type", "native"), ("client_name", "Evil"), ("redirect_uris", "http://127.0.0.1/cb")]
                ),
                ("/admin/apps/\(fixture.native.id)/delete", []),
                ("/admin/users", [("username", "mallory"), ("password", "mallory-pass"), ("role", "admin")]),
                ("/admin/users/\(fixture.bob.id)/disable", []),
                ("/admin/users/\(fixture.bob.id)/role", [("role", "admin")]),
                ("/admin/scopes", [("name", "evil"), ("description", "Evil")]),
            ]
            for (path, fields) in forged {
                for token in [nil, "wrong"] {
                    let page = try await browser.post(path, form: fields + (token.map { [("csrf_token", $0)] } ?? []))
                    #expect(page.status == .forbidden, "\(path) \(token ?? "none")")
                }
            }
            #expect(try await fixture.store.clients().contains { $0.name == "Evil" } == false)
            #expect(try await fixture.store.client(id: fixture.native.id) != nil)
            #expect(try await fixture.store.user(username: "mallory") == nil)
            #expect(try await fixture.store.user(id: fixture.bob.id)?.disabledAt == nil)
            #expect(try await fixture.store.user(id: fixture.bob.id)?.role == UserRole.none)
            #expect(try await !fixture.store.scopeCatalogue().contains { $0.name == "evil" })
        }
    }

    @Test(
        "AD3 RV9 Deleting, rotating, role changes, new administrators and enabling need a recent password; re-authentication comes back to the page"
    )
    func reauthentication() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            let confirm = "/admin/apps/\(fixture.web.id)/rotate-secret"
            #expect(try await browser.get(confirm).status == .ok, "fresh from sign-in: no second password")
            fixture.clock.advance(by: fixture.server.configuration.adminReauthenticationWindow + 1)
            let csrf = try await browser.get("/admin/apps/new").field("csrf_token") ?? ""
            for path in [confirm, "/admin/apps/\(fixture.native.id)/delete", "/admin/users/\(fixture.bob.id)/delete"] {
                let page = try await browser.get(path)
                #expect(page.status == .seeOther && page.location?.hasPrefix("/admin/reauthenticate?next=") == true, "\(path)")
                let posted = try await browser.post(path, form: [("csrf_token", csrf)])
                #expect(posted.location?.hasPrefix("/admin/reauthenticate?next=") == true, "\(path) POST")
            }
            #expect(try await fixture.store.client(id: fixture.native.id) != nil, "nothing deleted without the password")
            // RV9: what grants access needs the password as recently: a new administrator, a role
            // change, enabling a disabled account.
            try await fixture.admin.setDisabled(username: "bob", true)
            for (path, fields) in [
                ("/admin/users", [("username", "mallory"), ("password", "mallory-pass"), ("role", "admin")]),
                ("/admin/users/\(fixture.bob.id)/role", [("role", "admin")]),
                ("/admin/users/\(fixture.bob.id)/enable", []),
            ] {
                let posted = try await browser.post(path, form: [("csrf_token", csrf)] + fields)
                #expect(posted.location?.hasPrefix("/admin/reauthenticate?next=") == true, "\(path) POST")
            }
            #expect(try await fixture.store.user(username: "mallory") == nil)
            #expect(try await fixture.store.user(id: fixture.bob.id)?.role == UserRole.none)
            #expect(try await fixture.store.user(id: fixture.bob.id)?.disabledAt != nil)
            // An ordinary account needs no second password.
            let plain = try await browser.post(
                "/admin/users", form: [("csrf_token", csrf), ("username", "carol"), ("password", "carol-pass")])
            #expect(plain.status == .seeOther && plain.location?.hasPrefix("/admin/users/") == true)

            let form = try await browser.get("/admin/reauthenticate?next=" + Browser.encode(confirm))
            let wrong = try await browser.post(
                "/admin/reauthenticate", form: [("csrf_token", form.field("csrf_token")!), ("next", confirm), ("password", "no")])
            #expect(wrong.status == .unauthorized)
            let right = try await browser.post(
                "/admin/reauthenticate",
                form: [("csrf_token", form.field("csrf_token")!), ("next", confirm), ("password", Fixture.password)])
            #expect(right.status == .seeOther && right.location == confirm)
            let page = try await browser.get(confirm)
            #expect(page.status == .ok)
            let rotated = try await browser.post(confirm, form: [("csrf_token", page.field("csrf_token")!)])
            #expect(rotated.status == .ok && rotated.body.contains("lk_cs_"), "the new secret is shown once")
            #expect(rotated.headers[.cacheControl] == "no-store")
        }
    }

    @Test("AD4 RV16 After sign-in and re-authentication the console goes back only to its own pages, never to another site")
    func noOpenRedirect() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            for next in [
                "https://evil.example/", "//evil.example/admin", "/admin/../../evil", "/\\evil.example", "/account",
                // RV16: dot segments and slashes percent-encoded, once or twice.
                "/admin/%2e%2e/%2e%2e/evil", "/admin/%2E%2E/account", "/admin/%252e%252e/evil", "/admin%2f..%2fevil",
                "/admin/%2f%2fevil.example",
            ] {
                let login = try await browser.get("/login?next=" + Browser.encode(next))
                let done = try await browser.post(
                    "/login",
                    form: [
                        ("csrf_token", login.field("csrf_token")!), ("username", "alice"), ("password", Fixture.password),
                        ("next", next),
                    ])
                #expect(done.location == "/admin", "\(next) → \(done.location ?? "none")")
                let csrf = try await browser.get("/admin/apps/new").field("csrf_token")!
                let again = try await browser.post(
                    "/admin/reauthenticate", form: [("csrf_token", csrf), ("next", next), ("password", Fixture.password)])
                #expect(again.location == "/admin", "\(next) → \(again.location ?? "none")")
            }
        }
    }

    @Test("The app form refuses bad input with 400 naming the problem, and saves nothing")
    func badInput() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            let csrf = try await browser.get("/admin/apps/new").field("csrf_token")!
            let before = try await fixture.store.clients().count
            let cases: [[(String, String)]] = [
                [("application_type", "robot"), ("client_name", "A")],
                [("application_type", "native"), ("client_name", ""), ("redirect_uris", "http://127.0.0.1/cb")],
                [("application_type", "native"), ("client_name", "A"), ("redirect_uris", "http://evil.example/cb\n")],
                [
                    ("application_type", "native"), ("client_name", "A"), ("client_name", "B"),
                    ("redirect_uris", "http://127.0.0.1/cb"),
                ],
                [
                    ("application_type", "native"), ("client_name", "A"), ("redirect_uris", "http://127.0.0.1/cb"),
                    ("scope", "nope"),
                ],
            ]
            for fields in cases {
                let page = try await browser.post("/admin/apps", form: [("csrf_token", csrf), ("action", "save")] + fields)
                #expect(page.status == .badRequest, "\(fields)")
                #expect(page.body.contains("class=\"error\""), "\(fields)")
            }
            #expect(try await fixture.store.clients().count == before)
        }
    }

    @Test("The Activity page lists what happened, filtered by event and user, for administrators only")
    func activity() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            try await fixture.admin.acting(as: fixture.alice).setDisabled(username: "bob", true)
            let page = try await browser.get("/admin/activity?days=1")
            #expect(page.status == .ok)
            #expect(page.body.contains("login.succeeded") && page.body.contains("user.disabled"))
            #expect(page.body.contains("alice (admin)"), "the acting admin is named")
            let filtered = try await browser.get("/admin/activity?days=1&event=user.disabled&user=bob")
            #expect(filtered.body.contains("user.disabled") && !filtered.body.contains("<strong>login.succeeded</strong>"))
            let other = Browser(port: browser.port)
            try await fixture.admin.setDisabled(username: "bob", false)
            try await signIn(other, as: "bob", password: "battery-staple")
            #expect(try await other.get("/admin/activity").status == .forbidden)
            try await other.close()
        }
    }

    @Test("An administrator signs out one of a user's sessions, named by its hash; another user's stays")
    func endOneSession() async throws {
        try await withLiveServer { fixture, browser in
            try await fixture.admin.setRole(username: "alice", role: .admin)
            try await signIn(browser)
            let (bobs, _) = try await fixture.signedIn(as: "bob")
            let (alices, _) = try await fixture.signedIn(as: "alice")
            let page = try await browser.get("/admin/users/\(fixture.bob.id)")
            #expect(page.body.contains(bobs.idHash.rawValue))
            let csrf = try #require(page.field("csrf_token"))
            // Alice's session named under bob's page is left alone.
            _ = try await browser.post(
                "/admin/users/\(fixture.bob.id)/end-session", form: [("csrf_token", csrf), ("session", alices.idHash.rawValue)])
            #expect(try await fixture.store.session(idHash: alices.idHash) != nil)
            let ended = try await browser.post(
                "/admin/users/\(fixture.bob.id)/end-session", form: [("csrf_token", csrf), ("session", bobs.idHash.rawValue)])
            #expect(ended.status == .seeOther && ended.location?.hasSuffix("done=session-ended") == true)
            #expect(try await fixture.store.session(idHash: bobs.idHash) == nil)
        }
    }
}
