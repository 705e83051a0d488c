import Foundation
import LatchkeyCore

// The account's own second factors: setting up an authenticator, new recovery codes, turning
// them off. Each needs the CSRF token; turning off and new codes need the password too, and so
// does setting up once the sign-in is older than `admin-reauthentication-window` (MF5).
extension SecondFactors {
    /// Whether setting up an authenticator or a passkey needs the password again: the session
    /// signed in longer ago than the re-authentication window, so it may be one left open or
    /// stolen; or the account has a second factor already, which the new one would stand beside
    /// or replace.
    public func setUpNeedsPassword(_ session: BrowserSession, _ user: User) async throws -> Bool {
        if now.timeIntervalSince(session.createdAt) >= configuration.adminReauthenticationWindow { return true }
        return try await hasSecondFactor(user.id)
    }

    /// Refuses a change to an account's second factors from a session that signed in without one:
    /// a session from before they were set up, or a password someone else learnt, must not replace,
    /// add to or remove them (MF5).
    func refusedWithoutSecondFactor(_ user: User, _ session: BrowserSession) async throws -> SelfServiceOutcome? {
        try await mayChangeSecondFactors(user, session) ? nil : .invalid(field: nil, message: Self.signInWithSecondFactor)
    }

    /// Whether `session` may change `user`'s second factors: it used one, or the account has none.
    public func mayChangeSecondFactors(_ user: User, _ session: BrowserSession) async throws -> Bool {
        if (session.amr ?? .password).isMultiFactor { return true }
        return try await !hasSecondFactor(user.id)
    }

    public static let signInWithSecondFactor =
        "This browser signed in without your second factor. Sign out, then sign in again with it "
        + "to change your second factors."

    /// `POST /account/security/totp` (fields `factor`, `code`, and `current_password` when
    /// ``setUpNeedsPassword(_:_:)``): confirms the authenticator being set up with its first code.
    public func confirm(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        if let refused = try await refusedWithoutSecondFactor(user, session) { return refused }
        if try await setUpNeedsPassword(session, user),
            let refused = try await reauthenticate(user, form["current_password"], session: session, clientAddress: clientAddress)
        {
            return refused
        }
        guard let factor = form["factor"],
            let (codes, fresh) = try await confirmTOTP(
                SecondFactorID(rawValue: factor), code: form["code"] ?? "", user: user, session: session)
        else {
            return .invalid(
                field: "code", message: "That code is not right. Check the app's clock and enter the code it shows now.")
        }
        try await tell(user, "An authenticator app (with new recovery codes) was set up")
        let next = SelfService.pendingRequest(form["request"]).map {
            "/consent?request=" + FormParameters.percentEncode($0.rawValue)
        }
        return .recoveryCodes(codes, session: fresh, next: next ?? "/account/security")
    }

    /// `POST /account/security/recovery-codes` (field `current_password`): ten new recovery codes
    /// replace the old ones.
    public func renewRecoveryCodes(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        guard try await authenticator(of: user.id) != nil else {
            return .invalid(field: nil, message: "Set up an authenticator app first.")
        }
        if let refused = try await refusedWithoutSecondFactor(user, session) { return refused }
        if let refused = try await reauthenticate(user, form["current_password"], session: session, clientAddress: clientAddress)
        {
            return refused
        }
        let codes = try await renewRecoveryCodes(of: user.id)
        try await tell(user, "New recovery codes replaced the old ones")
        return .recoveryCodes(codes, session: nil, next: "/account/security")
    }

    /// `POST /account/security/remove` (field `current_password`): removes the authenticator and
    /// the recovery codes, unless the account must have a second factor.
    public func remove(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        let keepsAPasskey = try await !passkeys.store.passkeys(userID: user.id).isEmpty
        guard !isRequired(for: user) || keepsAPasskey else {
            return .invalid(
                field: nil,
                message: "Your account must keep a second factor. You can set up another authenticator app instead.")
        }
        if let refused = try await refusedWithoutSecondFactor(user, session) { return refused }
        if let refused = try await reauthenticate(user, form["current_password"], session: session, clientAddress: clientAddress)
        {
            return refused
        }
        try await removeAll(of: user.id)
        try await tell(user, "Two-step sign-in with an authenticator app was turned off")
        return .done(
            Notice(
                heading: "Two-step sign-in is off",
                message: "Your authenticator app and recovery codes no longer work for this account.",
                link: Notice.Link(label: "Back to security", href: "/account/security")))
    }

    /// `POST /account/security/passkeys` (fields `name`, `current_password`, and the
    /// registration's `challenge`, `client_data`, `attestation_object` from the page's script):
    /// adds a passkey. The password is asked every time: a passkey signs in without it, and a
    /// password change does not remove it.
    public func addPasskey(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        if let refused = try await refusedWithoutSecondFactor(user, session) { return refused }
        if let refused = try await reauthenticate(user, form["current_password"], session: session, clientAddress: clientAddress)
        {
            return refused
        }
        if let problem = try await passkeys.register(form, session: session, user: user) {
            return .invalid(field: nil, message: problem)
        }
        try await tell(user, "A passkey was added")
        return .done(
            Notice(
                heading: "Passkey added",
                message: "You can now sign in with it, without your password, and use it as your second step.",
                link: Notice.Link(label: "Back to security", href: "/account/security")))
    }

    /// `POST /account/security/passkeys/remove` (fields `credential_id`, `current_password`).
    public func removePasskey(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session),
            let id = form["credential_id"]
        else { return .forbidden }
        let all = try await passkeys.store.passkeys(userID: user.id)
        if isRequired(for: user), try await authenticator(of: user.id) == nil, all.count == 1 {
            return .invalid(
                field: nil, message: "Your account must keep a second factor. Add another passkey or an authenticator app first.")
        }
        if let refused = try await refusedWithoutSecondFactor(user, session) { return refused }
        if let refused = try await reauthenticate(user, form["current_password"], session: session, clientAddress: clientAddress)
        {
            return refused
        }
        guard try await passkeys.store.deletePasskey(credentialID: CredentialID(rawValue: id), userID: user.id) else {
            return .invalid(field: nil, message: "There is no such passkey on your account.")
        }
        event(.accountSecondFactorsRemoved, ["user_id": "\(user.id)", "kind": "passkey"])
        try await tell(user, "A passkey was removed")
        return .done(
            Notice(
                heading: "Passkey removed", message: "It no longer signs in to this account.",
                link: Notice.Link(label: "Back to security", href: "/account/security")))
    }

    /// Tells the account's confirmed address that `change` happened to its second factors, so a
    /// change its owner did not make is noticed (MF5).
    func tell(_ user: User, _ change: String) async throws {
        guard let mailer, let email = user.email, user.emailVerified else { return }
        try await mailer.send(
            AccountMail(
                kind: "second_factors_changed", recipient: email, subject: "Your sign-in settings were changed",
                greeting: "Hello \(user.username),",
                paragraphs: ["\(change) on the account \(user.username) at \(siteName)."],
                action: ("Review your sign-in settings", issuer + "/account/security"),
                footnote: "If this was not you, change your password at once and tell the people who run \(siteName)."))
    }

    /// Confirms it is the signed-in person: their password, or a recent sign-in for an account
    /// that has none (``BrowserSessions/confirm(_:password:session:clientAddress:)``).
    func reauthenticate(_ user: User, _ password: String?, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome?
    {
        switch try await sessions.confirm(user, password: password, session: session, clientAddress: clientAddress) {
        case .confirmed: return nil
        case .throttled(let retryAfter): return .throttled(retryAfter: retryAfter)
        case .busy(let retryAfter): return .busy(retryAfter: retryAfter)
        case .wrongPassword: return .invalid(field: "current_password", message: "The current password is not right.")
        case .signInTooOld: return .invalid(field: nil, message: BrowserSessions.signInAgain(configuration))
        }
    }
}
