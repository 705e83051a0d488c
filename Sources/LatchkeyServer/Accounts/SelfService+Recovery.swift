import Foundation
import LatchkeyCore

// Password reset by e-mail (docs/accounts.md, docs/threat-model.md AC2–AC6).
extension SelfService {
    /// What `/password/forgot` always answers, whether or not an account matched.
    public static let resetRequested = Notice(
        heading: "Check your e-mail",
        message: "If an account matches what you entered and has an e-mail address, we sent a link to that address. "
            + "It works once, within an hour. Nothing arrived? Look in the spam folder, or ask the people who run this site.",
        link: Notice.Link(label: "Back to sign-in", href: "/login"))

    /// `POST /password/forgot` (field `login`: a username or an e-mail address).
    ///
    /// The answer is the same for a known and an unknown account, in words and in time: after
    /// the per-address count, which every request makes, the lookup and the e-mail happen in a
    /// task of their own that the answer does not wait for. Reset links for one account are
    /// limited (``resetsPerAccount`` an hour), silently, so a flood sends its owner no more.
    public func requestPasswordReset(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard isGenuine(form, session) else { return .forbidden }
        guard mailer != nil else { return .invalid(field: nil, message: Self.noMail) }
        let login = (form["login"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !login.isEmpty, login.utf8.count <= 254, !login.hasNUL else {
            return .invalid(field: "login", message: "Enter your username or e-mail address.")
        }
        if let retryAfter = try await overLimit(
            "reset-address:" + ClientAddressBlock.of(clientAddress), limit: Self.resetRequestsPerAddress)
        {
            event(.accountPasswordResetThrottled, ["scope": "address", "client_address": "\(clientAddress)"])
            return .throttled(retryAfter: retryAfter)
        }
        let service = self
        Task {
            // Begun once the answer has gone, so that its work does not share the cores with it.
            try? await Task.sleep(for: .milliseconds(50))
            do { try await service.sendResetLinks(login: login) } catch {
                service.context.logger.error("password reset e-mail not queued", metadata: ["error": "\(error)"])
            }
        }
        return .done(Self.resetRequested)
    }

    /// Sends a reset link to each enabled account `login` names (by username, or by address: at
    /// most five accounts share one).
    func sendResetLinks(login: String) async throws {
        guard let mailer else { return }
        let accounts: [User] =
            login.contains("@")
            ? Array(try await users.users(email: login).prefix(5))
            : [try await users.user(username: Username(rawValue: login))].compactMap { $0 }
        for user in accounts where user.disabledAt == nil {
            guard let email = user.email else { continue }
            if try await overLimit("reset-account:\(user.id)", limit: Self.resetsPerAccount) != nil {
                event(.accountPasswordResetThrottled, ["scope": "account", "user_id": "\(user.id)"])
                continue
            }
            let (secret, link) = makeLink(.passwordReset, userID: user.id, email: email, lifetime: Self.resetLifetime)
            try await links.insertAccountLink(link)
            try await mailer.send(
                AccountMail(
                    kind: "password_reset", recipient: email, subject: "Reset your password",
                    greeting: "Hello \(user.username),",
                    paragraphs: [
                        "Someone asked to reset the password of the account \(user.username) at \(siteName).",
                        "Choose a new one with the button below within an hour. The link works once; using it signs "
                            + "the account out everywhere and every app must ask for access again.",
                    ],
                    action: ("Choose a new password", url("/password/reset", token: secret)),
                    footnote: "If you did not ask for this, ignore this message: your password stays as it is."))
            event(.accountPasswordResetRequested, ["user_id": "\(user.id)"])
        }
    }

    /// `GET /password/reset?token=…`: the account the link resets, or `nil` when the link was
    /// used, expired, replaced or is unknown. Opening the page uses nothing.
    public func resetAccount(token: String?) async throws -> User? {
        guard let token, !token.isEmpty,
            let link = try await links.accountLink(hash: AccountLinkHash(of: token), purpose: .passwordReset, at: now),
            let userID = link.userID, let user = try await users.user(id: userID), user.disabledAt == nil
        else { return nil }
        return user
    }

    /// `POST /password/reset` (fields `token`, `password`): sets the password, ends every session
    /// of the account and revokes every grant, code and device approval, as an administrator's
    /// reset does; the link is used in the same transaction, so it works once.
    public func resetPassword(_ form: FormParameters, session: BrowserSession) async throws -> SelfServiceOutcome {
        guard isGenuine(form, session) else { return .forbidden }
        guard let token = form["token"], let user = try await resetAccount(token: token) else { return .done(Self.usedLink) }
        let hash: String
        do {
            hash = try await hashNewPassword(form["password"] ?? "", username: user.username.rawValue, email: user.email)
        } catch let refused as Refused { return refused.outcome }
        guard try await links.resetPassword(link: AccountLinkHash(of: token), passwordHash: hash, at: now) else {
            return .done(Self.usedLink)
        }
        event(.accountPasswordReset, ["user_id": "\(user.id)"])
        try await sendPasswordChangedNotice(user)
        return .done(
            Notice(
                heading: "Your password is changed",
                message: "Every session of the account ended and every app must ask for access again. "
                    + "Sign in with the new password.",
                link: Notice.Link(label: "Sign in", href: "/login")),
            signedOut: session.userID == user.id)
    }

    /// Tells the account's address that its password changed.
    func sendPasswordChangedNotice(_ user: User) async throws {
        guard let mailer, let email = user.email else { return }
        try await mailer.send(
            AccountMail(
                kind: "password_changed", recipient: email, subject: "Your password was changed",
                greeting: "Hello \(user.username),",
                paragraphs: [
                    "The password of the account \(user.username) at \(siteName) was just changed. Every other session "
                        + "of the account ended and every app must ask for access again."
                ],
                action: nil,
                footnote: "If this was not you, reset your password at \(issuer)/password/forgot and tell the people "
                    + "who run \(siteName)."))
    }
}
