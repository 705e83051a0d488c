import Foundation
import LatchkeyCore

// E-mail verification (docs/accounts.md): a link to the address proves it; using it
// makes it the account's address, verified.
extension SelfService {
    /// Sends `email` a link that makes it `user`'s verified address, unless the account was sent
    /// ``verificationsPerAccount`` in the last hour. An earlier link of the account stops working.
    /// - Returns: whether a link was sent.
    @discardableResult
    func sendVerification(to user: User, email: String, pendingRequestID: PendingRequestID? = nil) async throws -> Bool {
        guard let mailer else { return false }
        if try await overLimit("verify-account:\(user.id)", limit: Self.verificationsPerAccount) != nil {
            event(.accountEmailVerificationThrottled, ["user_id": "\(user.id)"])
            return false
        }
        let (secret, link) = makeLink(
            .emailVerification, userID: user.id, email: email, lifetime: Self.verificationLifetime,
            pendingRequestID: pendingRequestID)
        try await links.insertAccountLink(link)
        try await mailer.send(
            AccountMail(
                kind: "email_verification", recipient: email, subject: "Confirm your e-mail address",
                // No username: the address is not confirmed yet, and a stranger may have typed it
                // (the username is theirs to choose, so it must not speak to whoever reads this).
                greeting: "Hello,",
                paragraphs: [
                    "Someone, we hope you, asked to use this address for an account at \(siteName).",
                    "Confirm it with the button below within 24 hours. The link works once.",
                ],
                action: ("Confirm my address", url("/email/verify", token: secret)),
                footnote: "If you did not ask for this, ignore this message: nothing changes unless the link is opened."))
        event(.accountEmailVerificationSent, ["user_id": "\(user.id)"])
        return true
    }

    /// After a right password for an account that must verify its address first: sends the
    /// link again (as often as ``sendVerification(to:email:pendingRequestID:)`` allows).
    public func resendVerification(userID: UserID, pendingRequestID: String?) async throws -> Notice {
        if let user = try await users.user(id: userID), let email = user.email {
            try await sendVerification(
                to: user, email: email, pendingRequestID: Self.pendingRequest(pendingRequestID))
        }
        return Notice(
            heading: "Confirm your e-mail address first",
            message: "This account can sign in once its e-mail address is confirmed. We sent a link to the address "
                + "you signed up with; open it, then sign in again. Nothing arrived? Look in the spam folder, "
                + "or try again in a few minutes.")
    }

    /// `GET /email/verify?token=…`: the address the link verifies, or `nil` when it was used,
    /// expired or is unknown. Nothing is used yet: a mail scanner that opens the link changes nothing.
    public func verificationLink(token: String?) async throws -> AccountLink? {
        guard let token, !token.isEmpty else { return nil }
        return try await links.accountLink(hash: AccountLinkHash(of: token), purpose: .emailVerification, at: now)
    }

    /// `POST /email/verify` (fields `token`, `csrf_token`): uses the link.
    public func verifyEmail(_ form: FormParameters, session: BrowserSession) async throws -> SelfServiceOutcome {
        guard isGenuine(form, session) else { return .forbidden }
        guard let link = try await verificationLink(token: form["token"]), let userID = link.userID,
            try await links.verifyEmail(link: link.hash, at: now)
        else { return .done(Self.usedLink) }
        event(.accountEmailVerified, ["user_id": "\(userID)"])
        let next = link.pendingRequestID.map { "/login?request=" + FormParameters.percentEncode($0.rawValue) }
        return .done(
            Notice(
                heading: "Your e-mail address is confirmed", message: "\(link.email) is now the address of your account.",
                link: Notice.Link(label: next == nil ? "Go to your account" : "Sign in and continue", href: next ?? "/account")))
    }

    /// Whether changing the address needs the password typed again: the sign-in (or the last
    /// password typed) is older than `admin-reauthentication-window`, as in the console. An address
    /// is the way to reset the password, so an old or stolen session alone must not change it.
    public func emailChangeNeedsPassword(_ session: BrowserSession) -> Bool {
        now.timeIntervalSince(session.createdAt) >= configuration.adminReauthenticationWindow
    }

    /// `POST /account/email` (field `email`, and `current_password` when
    /// ``emailChangeNeedsPassword(_:)``): sends the new address a link that makes it the account's;
    /// the old address stays until then, and is told of the change.
    public func requestEmailChange(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard isGenuine(form, session), let user = try await sessions.signedInUser(session) else { return .forbidden }
        guard mailer != nil else { return .invalid(field: nil, message: Self.noMail) }
        if emailChangeNeedsPassword(session),
            let refused = try await reauthenticate(
                user, password: form["current_password"] ?? "", session: session, clientAddress: clientAddress)
        {
            return refused
        }
        let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
        if let problem = Self.emailProblem(email) { return .invalid(field: "email", message: problem) }
        guard signUp.allows(email: email) else {
            return .invalid(field: "email", message: "Addresses of this domain cannot be used here.")
        }
        if email.lowercased() == user.email?.lowercased(), user.emailVerified {
            return .invalid(field: "email", message: "This is already your confirmed address.")
        }
        guard try await sendVerification(to: user, email: email) else {
            return .throttled(retryAfter: Int(Self.hour))
        }
        if let old = user.email, old.lowercased() != email.lowercased(), let mailer {
            try await mailer.send(
                AccountMail(
                    kind: "email_change_notice", recipient: old, subject: "Your e-mail address is changing",
                    greeting: "Hello \(user.username),",
                    paragraphs: [
                        "Someone signed in as \(user.username) at \(siteName) asked to change the account's e-mail "
                            + "address from this one to \(email).",
                        "The change happens when the link sent to the new address is opened.",
                    ],
                    action: nil,
                    footnote: "If this was not you, change your password now and tell the people who run \(siteName)."))
        }
        event(.accountEmailChangeRequested, ["user_id": "\(user.id)"])
        return .done(
            Notice(
                heading: "Check your e-mail",
                message: "We sent a link to \(email). Your address stays \(user.email ?? "unset") until you open it.",
                link: Notice.Link(label: "Back to your account", href: "/account")))
    }

    /// What an e-mailed link's page and form say once the link cannot be used.
    public static let usedLink = Notice(
        heading: "This link no longer works",
        message: "It was used already, it expired, or a newer link replaced it. Ask for a new one.",
        link: Notice.Link(label: "Go to sign-in", href: "/login"))
    static let noMail =
        "This site cannot send e-mail, so this cannot be done here. Ask the people who run it."
}
