import Foundation
import LatchkeyCore

// The account page's changes (docs/accounts.md): a new password with the current one,
// and deleting the account after typing its password.
extension SelfService {
    /// Confirms it is the signed-in person: their current password (throttled as sign-in is), or a
    /// recent sign-in for an account without one (``BrowserSessions/confirm(_:password:session:clientAddress:)``).
    /// - Returns: the outcome to answer when the check did not pass, else `nil`.
    func reauthenticate(_ user: User, password: String, session: BrowserSession, clientAddress: String) async throws
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

    /// `POST /account/password` (fields `current_password`, `password`): sets the new password,
    /// ends every session of the account and revokes what it granted (as any password change
    /// does), then signs this browser in again with a fresh session.
    public func changePassword(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard isGenuine(form, session), let user = try await sessions.signedInUser(session) else { return .forbidden }
        if let refused = try await reauthenticate(
            user, password: form["current_password"] ?? "", session: session, clientAddress: clientAddress)
        {
            return refused
        }
        let hash: String
        do {
            hash = try await hashNewPassword(form["password"] ?? "", username: user.username.rawValue, email: user.email)
        } catch let refused as Refused { return refused.outcome }
        guard try await users.setPasswordHash(username: user.username, passwordHash: hash),
            let changed = try await users.user(id: user.id)
        else { return .forbidden }
        event(.accountPasswordChanged, ["user_id": "\(user.id)"])
        var (fresh, cookie) = sessions.makeSession(userID: user.id)
        fresh.accessEpoch = changed.accessEpoch
        // Signed in as this session was (with its second factor, if it used one).
        fresh.amr = session.amr
        try await sessionStore.insertSession(fresh)
        try await sendPasswordChangedNotice(user)
        return .done(
            Notice(
                heading: "Your password is changed",
                message: "Every other session of your account ended, and every app must ask for access again.",
                link: Notice.Link(label: "Back to your account", href: "/account")),
            session: SessionContext(session: fresh, newCookie: cookie))
    }

    /// `POST /account/delete` (field `current_password`): deletes the account with its sessions,
    /// consents, grants and tokens. An administrator's account is deleted by another administrator.
    public func deleteAccount(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SelfServiceOutcome
    {
        guard isGenuine(form, session), let user = try await sessions.signedInUser(session) else { return .forbidden }
        guard user.role != .admin else {
            return .invalid(
                field: nil, message: "An administrator's account is deleted by another administrator, from the console.")
        }
        if let refused = try await reauthenticate(
            user, password: form["current_password"] ?? "", session: session, clientAddress: clientAddress)
        {
            return refused
        }
        guard try await users.deleteUser(username: user.username) else { return .forbidden }
        event(.accountDeleted, ["user_id": "\(user.id)"])
        return .done(
            Notice(
                heading: "Your account is deleted",
                message: "The account \(user.username), its sessions and every app's access to it are gone."),
            signedOut: true)
    }
}
