import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Sign-up, verification, reset and the account page over plain types (docs/accounts.md); the
/// same over real HTTP and SMTP is `Tests/Interop/test_accounts.py`.
@Suite("Accounts people run themselves")
struct SelfServiceTests {
    static let password = "a long sleepy passphrase"

    func form(_ session: BrowserSession, _ fields: [(String, String)]) -> FormParameters {
        FormParameters([("csrf_token", session.csrfToken)] + fields)
    }

    func anonymous(_ fixture: Fixture) async throws -> BrowserSession {
        try await fixture.server.sessions.session(cookie: nil).session
    }

    /// The secret of the link to `path` in `mail`'s text.
    func token(in mail: OutgoingMail, path: String) throws -> String {
        let prefix = Fixture.issuer + path + "?"
        let word = try #require(mail.text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix(prefix) })
        let query = try FormParameters(decoding: word.dropFirst(prefix.count))
        return try #require(query["token"] ?? query["invitation"])
    }

    @Test("AC7 A signed-up account signs in only once its address is confirmed; the link sets email_verified")
    func signUpThenVerify() async throws {
        let fixture = try await Fixture.make(sendsMail: true) { $0.signUp.mode = .open }
        let session = try await anonymous(fixture)
        let outcome = try await fixture.server.selfService.signUp(
            form(session, [("username", "mia"), ("email", "mia@example.org"), ("password", Self.password)]),
            session: session, clientAddress: "192.0.2.1")
        guard case .done(let notice, nil, false) = outcome else { Issue.record("\(outcome)"); return }
        #expect(notice.heading == "Check your e-mail")
        let user = try #require(try await fixture.store.user(username: "mia"))
        #expect(user.mustVerifyEmail && !user.emailVerified && user.email == "mia@example.org")

        let signIn = form(session, [("username", "mia"), ("password", Self.password)])
        guard case .unverified = try await fixture.server.sessions.signIn(signIn, session: session, clientAddress: "192.0.2.1")
        else { Issue.record("an unconfirmed account signed in"); return }

        let mail = try await fixture.mail()
        #expect(mail.map(\.kind) == ["email_verification"] && mail.first?.recipient == "mia@example.org")
        let secret = try token(in: try #require(mail.first), path: "/email/verify")
        #expect(try await fixture.server.selfService.verificationLink(token: secret)?.email == "mia@example.org")
        let verify = form(session, [("token", secret)])
        guard case .done = try await fixture.server.selfService.verifyEmail(verify, session: session) else {
            Issue.record("not verified"); return
        }
        #expect(try await fixture.store.user(username: "mia")?.emailVerified == true)
        guard case .signedIn = try await fixture.server.sessions.signIn(signIn, session: session, clientAddress: "192.0.2.1")
        else { Issue.record("the confirmed account did not sign in"); return }
        // Used: the same link again changes nothing and says so.
        guard case .done(let again, _, _) = try await fixture.server.selfService.verifyEmail(verify, session: session) else {
            Issue.record("no answer"); return
        }
        #expect(again.heading == "This link no longer works")
    }

    @Test("AC3 Sign-up with an address that has an account answers as a new one and tells the address")
    func signUpWithATakenAddress() async throws {
        let fixture = try await Fixture.make(sendsMail: true) { $0.signUp.mode = .open }
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.org", emailVerified: true)
        let session = try await anonymous(fixture)
        let taken = try await fixture.server.selfService.signUp(
            form(session, [("username", "alice2"), ("email", "ALICE@example.org"), ("password", Self.password)]),
            session: session, clientAddress: "192.0.2.1")
        let fresh = try await fixture.server.selfService.signUp(
            form(session, [("username", "mia"), ("email", "mia@example.org"), ("password", Self.password)]),
            session: session, clientAddress: "192.0.2.1")
        guard case .done(let first, _, _) = taken, case .done(let second, _, _) = fresh else {
            Issue.record("\(taken) \(fresh)"); return
        }
        #expect(first.heading == second.heading && first.link == second.link)
        #expect(try await fixture.store.user(username: "alice2") == nil)
        // Queued at one instant of the test clock, so in no particular order.
        let mail = Dictionary(uniqueKeysWithValues: try await fixture.mail().map { ($0.kind, $0) })
        #expect(Set(mail.keys) == ["account_exists", "email_verification"])
        let exists = try #require(mail["account_exists"])
        #expect(exists.text.contains("the account alice.") && exists.recipient == "ALICE@example.org")
    }

    @Test("AC5 E-mail: both parts from one content, the HTML escaped, every link under the issuer")
    func rendering() async throws {
        let fixture = try await Fixture.make(sendsMail: true) { $0.signUp.mode = .open }
        let session = try await anonymous(fixture)
        _ = try await fixture.server.selfService.signUp(
            form(session, [("username", "eve"), ("email", "verify@example.org"), ("password", Self.password)]),
            session: session, clientAddress: "192.0.2.1")
        let mail = try #require(try await fixture.mail().first)
        let html = try #require(mail.html)
        // The username is the stranger's to choose: it is not in mail to an unconfirmed address.
        #expect(!mail.text.contains("eve") && !html.contains("eve"))
        let secret = try token(in: mail, path: "/email/verify")
        #expect(html.contains("href=\"\(Fixture.issuer)/email/verify?token=\(secret)\""))
        #expect(mail.text.hasSuffix("-- \nlatchkey.test\n"))
    }

    @Test("AC6 Reset links: three an hour for one account whatever is asked, then nothing, with one answer")
    func resetLimit() async throws {
        let fixture = try await Fixture.make(sendsMail: true)
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.org", emailVerified: true)
        let session = try await anonymous(fixture)
        for index in 0..<5 {
            let outcome = try await fixture.server.selfService.requestPasswordReset(
                form(session, [("login", index.isMultiple(of: 2) ? "alice" : "alice@example.org")]), session: session,
                clientAddress: "192.0.2.\(index)")
            guard case .done(let notice, _, _) = outcome else { Issue.record("\(outcome)"); return }
            #expect(notice == SelfService.resetRequested)
        }
        // The links are made apart from the answers: wait for them.
        var mail: [OutgoingMail] = []
        for _ in 0..<100 where mail.count < 3 {
            try await Task.sleep(for: .milliseconds(50))
            mail += try await fixture.mail()
        }
        try await Task.sleep(for: .milliseconds(300))
        mail += try await fixture.mail()
        #expect(mail.count == 3 && mail.allSatisfy { $0.kind == "password_reset" })
    }

    @Test("AC2 A reset link: the newest works once, ends the sessions, and the policy holds")
    func reset() async throws {
        let fixture = try await Fixture.make(sendsMail: true)
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.org", emailVerified: true)
        let signedIn = try await fixture.signedInSession()
        let session = try await anonymous(fixture)
        // One request at a time, the clock moved between them: the second link is the newer.
        var mail: [OutgoingMail] = []
        for count in 1...2 {
            _ = try await fixture.server.selfService.requestPasswordReset(
                form(session, [("login", "alice")]), session: session, clientAddress: "192.0.2.1")
            for _ in 0..<100 where mail.count < count {
                try await Task.sleep(for: .milliseconds(50))
                mail += try await fixture.mail()
            }
            fixture.clock.advance(by: 1)
        }
        let older = try token(in: mail[0], path: "/password/reset")
        let newer = try token(in: mail[1], path: "/password/reset")
        #expect(try await fixture.server.selfService.resetAccount(token: older) == nil)
        #expect(try await fixture.server.selfService.resetAccount(token: newer)?.username == "alice")
        guard
            case .invalid(field: "password", _) = try await fixture.server.selfService.resetPassword(
                form(session, [("token", newer), ("password", "alice2024!")]), session: session)
        else { Issue.record("the account's own name was accepted"); return }
        guard
            case .done = try await fixture.server.selfService.resetPassword(
                form(session, [("token", newer), ("password", Self.password)]), session: session)
        else { Issue.record("not reset"); return }
        #expect(try await fixture.store.session(idHash: signedIn.idHash) == nil)
        #expect(try await fixture.server.selfService.resetAccount(token: newer) == nil)
        #expect(try await fixture.mail().map(\.kind) == ["password_changed"])
    }

    @Test("AC8 A new address takes effect from its link only; the old address is told at once")
    func emailChange() async throws {
        let fixture = try await Fixture.make(sendsMail: true)
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.org", emailVerified: true)
        let session = try await fixture.signedInSession()
        guard
            case .done = try await fixture.server.selfService.requestEmailChange(
                form(session, [("email", "alice@example.net")]), session: session, clientAddress: "192.0.2.1")
        else { Issue.record("refused"); return }
        #expect(try await fixture.store.user(username: "alice")?.email == "alice@example.org")
        let mail = Dictionary(uniqueKeysWithValues: try await fixture.mail().map { ($0.kind, $0) })
        #expect(mail["email_verification"]?.recipient == "alice@example.net")
        #expect(mail["email_change_notice"]?.recipient == "alice@example.org")
        let other = try await anonymous(fixture)
        let link = try token(in: try #require(mail["email_verification"]), path: "/email/verify")
        _ = try await fixture.server.selfService.verifyEmail(form(other, [("token", link)]), session: other)
        let user = try #require(try await fixture.store.user(username: "alice"))
        #expect(user.email == "alice@example.net" && user.emailVerified)
    }

    @Test("AC8 An old session changes the address only with the password; a new password kills a pending change")
    func emailChangeNeedsRecentPassword() async throws {
        let fixture = try await Fixture.make(sendsMail: true)
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.org", emailVerified: true)
        let session = try await fixture.signedInSession()
        fixture.clock.advance(by: fixture.server.configuration.adminReauthenticationWindow + 1)
        #expect(fixture.server.selfService.emailChangeNeedsPassword(session))
        guard
            case .invalid(field: "current_password", _) = try await fixture.server.selfService.requestEmailChange(
                form(session, [("email", "eve@example.net")]), session: session, clientAddress: "192.0.2.1")
        else { Issue.record("an old session changed the address without the password"); return }
        guard
            case .done = try await fixture.server.selfService.requestEmailChange(
                form(session, [("email", "alice@example.net"), ("current_password", Fixture.password)]), session: session,
                clientAddress: "192.0.2.1")
        else { Issue.record("refused with the password"); return }
        let link = try token(
            in: try #require(try await fixture.mail().first { $0.kind == "email_verification" }), path: "/email/verify")
        try await fixture.admin.setPassword(username: "alice", password: Self.password)
        #expect(try await fixture.server.selfService.verificationLink(token: link) == nil)
    }

    @Test("AC8 A name that differs from an existing one only in case is taken, at sign-up and by administrators")
    func usernames() async throws {
        let fixture = try await Fixture.make(sendsMail: true) { $0.signUp.mode = .open }
        let session = try await anonymous(fixture)
        for (name, field) in [("ALICE", "username"), ("evil.example/confirm", "username"), ("a\u{202E}b", "username")] {
            let outcome = try await fixture.server.selfService.signUp(
                form(session, [("username", name), ("email", "x@example.org"), ("password", Self.password)]),
                session: session, clientAddress: "192.0.2.1")
            guard case .invalid(field: field, _) = outcome else { Issue.record("\(name): \(outcome)"); return }
        }
        // The same rule where administrators create accounts (CLI, console, admin API).
        await #expect(throws: AdministrationError.self) {
            _ = try await fixture.admin.createUser(username: "ALICE", displayName: nil, password: Self.password)
        }
        for address in ["a\"b@x.org", "a@x..org", String(repeating: "a", count: 65) + "@x.org", "a@-x.org"] {
            let outcome = try await fixture.server.selfService.signUp(
                form(session, [("username", "mia"), ("email", address), ("password", Self.password)]),
                session: session, clientAddress: "192.0.2.1")
            guard case .invalid(field: "email", _) = outcome else { Issue.record("\(address): \(outcome)"); return }
        }
    }
}
