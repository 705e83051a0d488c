import Foundation
import LatchkeyCore

// The account's own second factors: setting up an authenticator, new recovery codes, turning
// them off. Each needs the CSRF token; turning off and new codes need the password too, and so
// does setting up once the sign-in is older than `admin-reauthentication-window` (MF5).
extension SecondFactors {
    /// Whether setting up an authenticator needs the password again: the session signed in longer
    /// ago than the re-authentication window, so it may be one left open or stolen.
    public func setUpNeedsPassword(_ session: BrowserSession) -> Bool {
        now.timeIntervalSince(session.createdAt) >= configuration.adminReauthenticationWindow
    }

    /// `POST /account/security/totp` (fields `factor`, `code`, and `current_password` when
    /// ``setUpNeedsPassword(_:)``): confirms the authenticator being set up with its first code.
    public func confirm(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        if setUpNeedsPassword(session),
            let refused = try await reauthenticate(user, form["current_password"], clientAddress: clientAddress)
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
        if let refused = try await reauthenticate(user, form["current_password"], clientAddress: clientAddress) {
            return refused
        }
        return .recoveryCodes(try await renewRecoveryCodes(of: user.id), session: nil, next: "/account/security")
    }

    /// `POST /account/security/remove` (field `current_password`): removes the authenticator and
    /// the recovery codes, unless the account must have a second factor.
    public func remove(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form), let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        guard !isRequired(for: user) else {
            return .invalid(
                field: nil,
                message: "Your account must keep a second factor. You can set up another authenticator app instead.")
        }
        if let refused = try await reauthenticate(user, form["current_password"], clientAddress: clientAddress) {
            return refused
        }
        try await removeAll(of: user.id)
        return .done(
            Notice(
                heading: "Two-step sign-in is off",
                message: "Your authenticator app and recovery codes no longer work for this account.",
                link: Notice.Link(label: "Back to security", href: "/account/security")))
    }

    /// Checks the signed-in person's password, throttled as sign-in is.
    func reauthenticate(_ user: User, _ password: String?, clientAddress: String) async throws -> SelfServiceOutcome? {
        switch try await sessions.checkPassword(
            username: user.username.rawValue, password: password ?? "", clientAddress: clientAddress)
        {
        case .valid(let checked) where checked.id == user.id: return nil
        case .throttled(let retryAfter): return .throttled(retryAfter: retryAfter)
        case .busy(let retryAfter): return .busy(retryAfter: retryAfter)
        default: return .invalid(field: "current_password", message: "The current password is not right.")
        }
    }
}
