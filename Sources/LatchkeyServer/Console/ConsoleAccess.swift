import Foundation
import LatchkeyCore

/// The parts of the admin console (`/admin`), by who may enter them.
public enum ConsoleArea: Sendable {
    /// Apps: administrators see every app; with ``ServerConfiguration/selfServiceApps`` any
    /// signed-in user sees and edits the apps they own.
    case apps
    /// Users, scopes and activity: administrators only.
    case administration
}

/// A signed-in user allowed into a part of the console.
public struct ConsoleUser: Sendable {
    public let user: User
    public let session: BrowserSession
    /// Whether the password was entered within ``ServerConfiguration/adminReauthenticationWindow``:
    /// a sign-in (a password or a passkey) makes a fresh session, so the session's creation is the
    /// last time it was typed; the second step and a step-up keep it (``BrowserSessions``).
    public let recentlyAuthenticated: Bool

    public var isAdmin: Bool { user.isAdmin }

    /// Whether this user may see and change the client: administrators any, others their own.
    public func mayManage(_ client: Client) -> Bool { isAdmin || client.ownerUserID == user.id }
}

/// Whether a browser may see a console page.
public enum ConsoleAccess: Sendable {
    /// Signed out, or the console's idle timeout passed: show the sign-in page, then come back.
    case signIn
    /// 403: signed in, but not allowed here.
    case forbidden
    /// Allowed, but the policy requires a second factor this session has not used: the second
    /// step (or setting one up) first, then come back.
    case secondFactorNeeded
    case allowed(ConsoleUser)
}

/// The result of `POST /admin/reauthenticate`.
public enum ReauthenticationResult: Sendable {
    /// 403: no valid CSRF token, or not signed in.
    case forbidden
    /// The password was wrong; `message` says so, or how long to wait.
    case refused(message: String, retryAfter: Int?)
    /// A fresh session, so the password now counts as just entered.
    case renewed(SessionContext)
}

/// The admin console and the admin API (docs/design.md §7): who may enter, re-authentication,
/// and the views and changes behind the pages and `/admin/api`. Changes go through the
/// administration; the console reads clients, users, sessions, grants and the catalogues itself.
public struct Console: Sendable, ServerContextual {
    let administration: Administration
    let sessions: BrowserSessions
    let account: AccountEndpoint
    let accessTokens: AccessTokenValidation
    let clients: any ClientStore
    let users: any UserStore
    let sessionStore: any SessionStore
    let grants: any GrantStore
    let catalogue: any ScopeCatalogueStore & ResourceStore
    let auditEvents: any AuditStore
    let mail: any MailOutboxStore
    let secondFactors: SecondFactors
    /// Upstream identity providers: their store and the key their client secrets are sealed with.
    let federation: Federation
    let context: ServerContext

    /// Who the session belongs to and whether they may enter `area`.
    public func consoleAccess(_ context: SessionContext, area: ConsoleArea) async throws -> ConsoleAccess {
        guard let user = try await sessions.signedInUser(context.session) else { return .signIn }
        // Past the console's idle timeout the session ends, not just this request: reading the
        // session has already recorded this visit, so a refusal alone would let the next request
        // in (docs/threat-model.md RV11).
        guard context.idle < configuration.adminSessionIdleTimeout else {
            try await sessionStore.deleteSession(idHash: context.session.idHash)
            event(.sessionExpired, ["user_id": "\(user.id)", "reason": "console_idle"])
            return .signIn
        }
        guard user.isAdmin || (area == .apps && configuration.selfServiceApps) else {
            event(.adminForbidden, ["user_id": "\(user.id)"])
            return .forbidden
        }
        if !(context.session.amr ?? .password).isMultiFactor, try await secondFactors.needsTwoFactors(user) {
            return .secondFactorNeeded
        }
        let recent = now.timeIntervalSince(context.session.createdAt) < configuration.adminReauthenticationWindow
        return .allowed(ConsoleUser(user: user, session: context.session, recentlyAuthenticated: recent))
    }

    /// `POST /admin/reauthenticate`: the signed-in user types their password again (throttled as
    /// sign-in is); on success the session is replaced by a fresh one.
    public func reauthenticate(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> ReauthenticationResult
    {
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken),
            let user = try await sessions.signedInUser(session)
        else { return .forbidden }
        if form["credential_id"] != nil {
            // A passkey of the signed-in user instead of the password.
            guard
                try await secondFactors.passkeys.verifyAssertion(form, session: session, purpose: .reauthentication, user: user)
                    != nil
            else { return .refused(message: "That passkey could not be checked. Try again.", retryAfter: nil) }
            let fresh = try await sessions.signIn(
                user, with: session.amr ?? .password, replacing: session, keepingSignInTime: false)
            event(.loginReauthenticated, ["user_id": "\(user.id)", "client_address": "\(clientAddress)", "method": "passkey"])
            return .renewed(fresh)
        }
        guard configuration.usesPassword(user) else {
            return .refused(message: "Confirm it is you another way: this sign-in has no password.", retryAfter: nil)
        }
        switch try await sessions.checkPassword(
            username: user.username.rawValue, password: form["password"] ?? "", clientAddress: clientAddress)
        {
        case .valid(let checked) where checked.id == user.id:
            var (fresh, cookie) = sessions.makeSession(userID: user.id)
            sessions.carrySID(from: session, to: &fresh, for: user.id)
            fresh.accessEpoch = checked.accessEpoch
            // The password again, on top of whatever this session signed in with.
            fresh.amr = session.amr
            try await sessionStore.replaceSession(oldIDHash: session.idHash, with: fresh)
            event(.loginReauthenticated, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .renewed(SessionContext(session: fresh, newCookie: cookie))
        case .throttled(let retryAfter):
            return .refused(
                message: "Too many failed attempts. Try again in \((retryAfter + 59) / 60) minutes.", retryAfter: retryAfter)
        case .busy(let retryAfter):
            return .refused(
                message: "Latchkey is busy checking other sign-ins. Try again in a few seconds.", retryAfter: retryAfter)
        case .valid, .failed, .disabled:
            return .refused(message: "The password is not right.", retryAfter: nil)
        }
    }

    /// Whether the form carries this session's CSRF token, once.
    public func hasValidCSRFToken(_ form: FormParameters, session: BrowserSession) -> Bool {
        session.isCSRFToken(of: form)
    }
}
