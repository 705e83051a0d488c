import Foundation
import LatchkeyCore

/// What the sign-up form shows.
public struct SignUpForm: Sendable, Equatable {
    /// The invitation's address, which the account gets (verified); `nil` without an invitation.
    public var invitedEmail: String?
    /// The invitation's secret, carried by the form.
    public var invitation: String?

    public init(invitedEmail: String? = nil, invitation: String? = nil) {
        self.invitedEmail = invitedEmail
        self.invitation = invitation
    }
}

// Sign-up (`--sign-up open|invite`) and invitations (docs/accounts.md).
extension SelfService {
    /// `GET /signup`: `nil` (404) when sign-up is off; an invitation's address when `invitation`
    /// is one that works. In `invite` mode a form without a working invitation says so.
    public func signUpForm(invitation: String?) async throws -> SignUpForm? {
        guard signUp.mode != .off else { return nil }
        guard let invitation, !invitation.isEmpty,
            let link = try await links.accountLink(hash: AccountLinkHash(of: invitation), purpose: .invitation, at: now)
        else { return SignUpForm() }
        return SignUpForm(invitedEmail: link.email, invitation: invitation)
    }

    /// `POST /signup` (fields `username`, `email`, `password`; `invitation` from an invitation's
    /// link; `request` for an app's pending authorization request).
    ///
    /// A username that is taken is said to be (usernames are what people sign in with). An
    /// address that an account has already is not: the answer is the one a new account gets, and
    /// the address is told instead that it has an account (docs/threat-model.md AC3).
    public func signUp(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard signUp.mode != .off else { return .notFound }
        guard isGenuine(form, session) else { return .forbidden }
        var invitation: AccountLink?
        if let secret = form["invitation"], !secret.isEmpty {
            invitation = try await links.accountLink(hash: AccountLinkHash(of: secret), purpose: .invitation, at: now)
            if invitation == nil { return .invalid(field: nil, message: Self.usedInvitation) }
        } else if signUp.mode == .invite {
            return .invalid(field: nil, message: Self.invitationNeeded)
        }
        let username = (form["username"] ?? "").trimmingCharacters(in: .whitespaces)
        let email = invitation?.email ?? (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
        let password = form["password"] ?? ""
        if let problem = Self.usernameProblem(username) { return .invalid(field: "username", message: problem) }
        if let problem = Self.emailProblem(email) { return .invalid(field: "email", message: problem) }
        if invitation == nil, !signUp.allows(email: email) {
            return .invalid(field: "email", message: "Addresses of this domain cannot sign up here.")
        }
        do { try passwordPolicy.check(password, username: username, email: email) } catch let error as AdministrationError {
            return .invalid(field: "password", message: error.description)
        }
        if let retryAfter = try await overLimit(
            "signup-address:" + ClientAddressBlock.of(clientAddress), limit: signUp.signUpsPerAddress)
        {
            event(.accountSignUpThrottled, ["client_address": "\(clientAddress)"])
            return .throttled(retryAfter: retryAfter)
        }
        // Taken in any case: sign-in counts failures per name whatever its case, and a right
        // password clears that count, so `Alice` must not be made beside `alice`.
        if try await users.usernameTaken(ignoringCase: username) {
            return .invalid(field: "username", message: "That username is taken: choose another.")
        }
        // Hashed before the address is looked up, so a known address takes as long as a new one.
        let hash: String
        do { hash = try await passwordHasher.hash(password) } catch let busy as PasswordHashingBusy {
            return .busy(retryAfter: busy.retryAfter)
        }
        let pendingID = Self.pendingRequest(form["request"])
        if invitation == nil, let holder = try await users.users(email: email).first {
            try await sendAccountExists(to: email, holder: holder)
            return .done(Self.checkEmail(email))
        }
        let user = User(
            id: UserID(rawValue: UUID().uuidString.lowercased()), username: Username(rawValue: username), displayName: nil,
            passwordHash: hash, email: email, emailVerified: invitation != nil, createdAt: now,
            mustVerifyEmail: invitation == nil && signUp.requiresVerifiedEmail)
        do {
            guard try await links.insertUser(user, invitation: invitation?.hash, at: now) else {
                return .invalid(field: nil, message: Self.usedInvitation)
            }
        } catch StoreError.conflict {
            return .invalid(field: "username", message: "That username is taken: choose another.")
        }
        event(.accountSignedUp, ["user_id": "\(user.id)", "invited": "\(invitation != nil)"])
        if invitation == nil { try await sendVerification(to: user, email: email, pendingRequestID: pendingID) }
        if user.mustVerifyEmail { return .done(Self.checkEmail(email)) }
        var (fresh, cookie) = sessions.makeSession(userID: user.id)
        fresh.accessEpoch = user.accessEpoch
        try await sessionStore.replaceSession(oldIDHash: session.idHash, with: fresh)
        event(.loginSucceeded, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
        let next = pendingID.map { "/consent?request=" + FormParameters.percentEncode($0.rawValue) } ?? "/account"
        return .signedIn(SessionContext(session: fresh, newCookie: cookie), next: next)
    }

    /// Tells an address that already has an account that someone tried to sign up with it.
    func sendAccountExists(to email: String, holder: User) async throws {
        guard let mailer else { return }
        if try await overLimit("verify-account:\(holder.id)", limit: Self.verificationsPerAccount) != nil { return }
        try await mailer.send(
            AccountMail(
                kind: "account_exists", recipient: email, subject: "You already have an account",
                greeting: "Hello,",
                paragraphs: [
                    "Someone asked to create an account at \(siteName) with this address, which already belongs to "
                        + "the account \(holder.username). No new account was made.",
                    "If that was you and you forgot the password, you can choose a new one.",
                ],
                action: ("Reset my password", issuer + "/password/forgot"),
                footnote: "If it was not you, ignore this message."))
    }

    /// Invites `email` to create an account (`latchkey users invite`, the console): a link to
    /// `/signup` that works once, for ``invitationLifetime``. `actor` is who invited.
    public func invite(email: String, actor: String) async throws {
        guard let mailer else { throw AdministrationError(Self.noMail) }
        if let problem = Self.emailProblem(email) { throw AdministrationError(problem, field: "email") }
        let (secret, link) = makeLink(.invitation, userID: nil, email: email, lifetime: Self.invitationLifetime)
        try await links.insertAccountLink(link)
        try await mailer.send(
            AccountMail(
                kind: "invitation", recipient: email, subject: "You are invited to \(siteName)",
                greeting: "Hello,",
                paragraphs: [
                    "You are invited to create an account at \(siteName) with this address.",
                    "Create it with the button below within 7 days. The invitation works once.",
                ],
                action: ("Create my account", issuer + "/signup?invitation=" + FormParameters.percentEncode(secret)),
                footnote: "If you did not expect this, ignore this message."))
        event(.accountInvited, ["actor": "\(actor)"])
    }

    static func checkEmail(_ email: String) -> Notice {
        Notice(
            heading: "Check your e-mail",
            message: "We sent a link to \(email). Open it to confirm the address, then sign in. "
                + "It works for 24 hours. Nothing arrived? Look in the spam folder.",
            link: Notice.Link(label: "Sign in", href: "/login"))
    }

    static let usedInvitation = "This invitation no longer works: it was used or it expired. Ask for a new one."
    public static let invitationNeeded =
        "Accounts here are made by invitation only. Ask the people who run this site to send you one."
}
