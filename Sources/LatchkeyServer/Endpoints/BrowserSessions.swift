import Foundation
import LatchkeyCore
import Logging

/// A browser session and, when it was just created, the cookie value to send.
public struct SessionContext: Sendable {
    public var session: BrowserSession
    /// Set when the browser must be given a new session cookie.
    public var newCookie: String?
    /// How long the session had gone unused before this request (to the minute: use is recorded
    /// at most once a minute). The admin console's shorter idle timeout reads it.
    public var idle: TimeInterval = 0
}

extension BrowserSession {
    /// Whether `form` carries this session's CSRF token (`csrf_token`), once, compared in
    /// constant time: what every form of the pages checks first.
    public func isCSRFToken(of form: FormParameters) -> Bool {
        guard !form.isRepeated("csrf_token"), let csrf = form["csrf_token"] else { return false }
        return ConstantTime.equals(csrf, csrfToken)
    }
}

/// The result of `POST /login`.
public enum SignInResult: Sendable {
    /// 403: the CSRF token did not match this session.
    case forbidden(String)
    /// Wrong username or password (one message for both, so usernames cannot be probed).
    case failed(pendingID: String?)
    /// 429: too many failed sign-ins for this account or from this address; the password was not
    /// checked. Try again after `retryAfter` seconds.
    case throttled(pendingID: String?, retryAfter: Int)
    /// 503: too many sign-ins are being checked right now; the password was not checked. Try
    /// again after `retryAfter` seconds.
    case busy(pendingID: String?, retryAfter: Int)
    /// The password was right but an administrator disabled the account.
    case disabled(pendingID: String?)
    /// The password was right, but the account (made at `/signup`) must verify its e-mail address first.
    case unverified(pendingID: String?, userID: UserID)
    /// Signed in with a fresh session; continue with the pending request, if any.
    case signedIn(SessionContext, pendingID: String?)
    /// The password was right and the account has a second factor: a fresh session that is not
    /// signed in yet goes on to the second step (`/login/second-factor`).
    case secondFactorNeeded(SessionContext, pendingID: String?)
}

/// The outcome of checking a username and password.
enum PasswordCheck {
    case valid(User)
    /// Wrong username or password.
    case failed
    /// The password was right, but the account is disabled.
    case disabled
    case throttled(retryAfter: Int)
    case busy(retryAfter: Int)
}

/// The outcome of ``BrowserSessions/confirm(_:password:session:clientAddress:)``.
enum IdentityConfirmation {
    case confirmed
    case wrongPassword
    case throttled(retryAfter: Int)
    case busy(retryAfter: Int)
    /// No password to check, and the sign-in is older than the re-authentication window.
    case signInTooOld
}

/// Browser sessions: reading and renewing them, signing in with a password (throttled per account
/// and per address) and signing out. It touches sessions, users (read) and throttles only.
public struct BrowserSessions: Sendable, ServerContextual {
    let sessions: any SessionStore & LogoutDeliveryStore
    let users: any UserStore
    let throttles: any ThrottleStore
    let factors: any SecondFactorStore & PasskeyStore
    let passwordHasher: any PasswordHasher
    let context: ServerContext

    /// The session named by the cookie while it is within both its absolute lifetime and its idle
    /// timeout, or else a new anonymous one (which carries the CSRF token the login form needs).
    ///
    /// A session's `expiresAt` is where its idle timeout ends, moved on as it is used (never past
    /// its absolute lifetime), so the purge deletes what an anonymous visitor left behind once
    /// it has gone unused that long (docs/threat-model.md RV20). With `store: false` (a `HEAD`
    /// request, which shows no form) a new anonymous session is made but not kept, and no cookie
    /// is set for it.
    public func session(cookie: String?, store keep: Bool = true) async throws -> SessionContext {
        if let cookie, var session = try await sessions.session(idHash: SessionIDHash(of: cookie)) {
            let now = self.now
            let idle = now.timeIntervalSince(session.lastSeenAt)
            if session.expiresAt > now, idle < configuration.sessionIdleTimeout {
                // Recorded at most once a minute, so browsing does not write on every page.
                if idle >= 60 {
                    session.lastSeenAt = now
                    session.expiresAt = sessionEnd(createdAt: session.createdAt)
                    try await sessions.touchSession(idHash: session.idHash, at: now, expiresAt: session.expiresAt)
                }
                return SessionContext(session: session, newCookie: nil, idle: idle)
            }
            try await sessions.deleteSession(idHash: session.idHash)
            if session.userID != nil { event(.sessionExpired, ["user_id": "\(session.userID ?? "")"]) }
        }
        let (session, value) = makeSession(userID: nil)
        guard keep else { return SessionContext(session: session, newCookie: nil) }
        try await sessions.insertSession(session)
        return SessionContext(session: session, newCookie: value)
    }

    /// Keeps the `sid` of `old` in `fresh` when both are `user`'s (signed in, or owing the second
    /// step): the same session at the apps, under a new cookie. Anyone else's session ends there,
    /// and its apps are told (``SessionStore/replaceSession(oldIDHash:with:)``).
    func carrySID(from old: BrowserSession, to fresh: inout BrowserSession, for user: UserID) {
        if old.userID == user || old.secondFactorUserID == user { fresh.sid = old.sid }
    }

    func makeSession(userID: UserID?) -> (BrowserSession, cookie: String) {
        let value = RandomToken.generate(.session)
        let session = BrowserSession(
            idHash: SessionIDHash(of: value), userID: userID, csrfToken: RandomToken.generate(.csrf), createdAt: now,
            expiresAt: sessionEnd(createdAt: now))
        return (session, value)
    }

    /// When a session made at `createdAt` and used now ends unless it is used again: after the
    /// idle timeout, and never past its absolute lifetime.
    func sessionEnd(createdAt: Date) -> Date {
        min(createdAt.addingTimeInterval(configuration.sessionLifetime), now.addingTimeInterval(configuration.sessionIdleTimeout))
    }

    /// `POST /login`: checks the CSRF token and the credentials (``checkPassword(username:password:clientAddress:)``),
    /// then replaces the session with a fresh one (no session fixation) that keeps the pending
    /// requests. An account with a second factor is not signed in yet: its fresh session owes the
    /// second step (``BrowserSession/secondFactorUserID``).
    public func signIn(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws -> SignInResult {
        let pendingID = form.isRepeated("request") ? nil : form["request"]
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken)
        else {
            return .forbidden("This form has expired or did not come from this site. Reload the page and try again.")
        }
        guard configuration.passwordSignIn else {
            return .forbidden("Passwords are turned off here. Sign in with one of the other ways the sign-in page shows.")
        }
        let username = form["username"] ?? ""
        switch try await checkPassword(username: username, password: form["password"] ?? "", clientAddress: clientAddress) {
        case .throttled(let retryAfter): return .throttled(pendingID: pendingID, retryAfter: retryAfter)
        case .busy(let retryAfter): return .busy(pendingID: pendingID, retryAfter: retryAfter)
        case .failed: return .failed(pendingID: pendingID)
        case .disabled: return .disabled(pendingID: pendingID)
        case .valid(let user) where user.mustVerifyEmail && !user.emailVerified:
            event(.loginRefusedUnverified, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .unverified(pendingID: pendingID, userID: user.id)
        case .valid(let user):
            return try await signIn(
                user, firstFactor: .password, replacing: session, pendingID: pendingID, clientAddress: clientAddress)
        }
    }

    /// Replaces `session` with a fresh one (no session fixation) that keeps the pending requests,
    /// for `user` whose first factor was just checked (a password, or an upstream provider's
    /// sign-in): signed in, or, when the account has a second factor, owing the second step
    /// (``BrowserSession/secondFactorUserID``).
    ///
    /// `authenticatedAt` is when the person last proved who they are, when that was before now:
    /// an upstream provider's `auth_time`. The session counts from then (its `auth_time`, `max_age`,
    /// the console's and the account pages' "recent sign-in"), so a provider that answered from a
    /// session of its own an hour old does not make a sign-in look new. It is taken no further back
    /// than half the session's lifetime, so that the session is not born expired.
    func signIn(
        _ user: User, firstFactor: AuthenticationMethods, replacing session: BrowserSession, pendingID: String?,
        clientAddress: String, authenticatedAt: Date? = nil
    ) async throws -> SignInResult {
        func dated(_ session: inout BrowserSession) {
            guard let authenticatedAt, authenticatedAt < now else { return }
            session.createdAt = max(authenticatedAt, now.addingTimeInterval(-configuration.sessionLifetime / 2))
            session.expiresAt = sessionEnd(createdAt: session.createdAt)
            session.lastSeenAt = now
        }
        if try await hasSecondFactor(user.id) {
            var (fresh, cookie) = makeSession(userID: nil)
            fresh.secondFactorUserID = user.id
            fresh.amr = firstFactor
            dated(&fresh)
            carrySID(from: session, to: &fresh, for: user.id)
            try await sessions.replaceSession(oldIDHash: session.idHash, with: fresh)
            return .secondFactorNeeded(SessionContext(session: fresh, newCookie: cookie), pendingID: pendingID)
        }
        var (fresh, cookie) = makeSession(userID: user.id)
        fresh.amr = firstFactor
        dated(&fresh)
        carrySID(from: session, to: &fresh, for: user.id)
        // As a read from the store would bring it: the epoch the first factor was checked under.
        fresh.accessEpoch = user.accessEpoch
        try await sessions.replaceSession(oldIDHash: session.idHash, with: fresh)
        var fields: Logger.Metadata = ["user_id": "\(user.id)", "client_address": "\(clientAddress)"]
        if let provider = firstFactor.identityProvider { fields["identity_provider"] = "\(provider)" }
        event(.loginSucceeded, fields)
        return .signedIn(SessionContext(session: fresh, newCookie: cookie), pendingID: pendingID)
    }

    /// Checks a username and password as sign-in does, with its throttling: attempts are counted
    /// per account and per client address block in the store, so every instance sees them
    /// (docs/threat-model.md T62, RV14). Each attempt is counted before the password is checked,
    /// atomically, and decided on the count it got, so simultaneous guesses cannot all slip under
    /// the limit; a right password takes its count back. Over either limit the password is not
    /// even checked, and the answer is the same whether or not the account exists.
    func checkPassword(username: String, password: String, clientAddress: String) async throws -> PasswordCheck {
        // The account key is a hash, so the table holds no usernames (nor whatever was typed).
        let accountKey = ThrottleKey(rawValue: "account:" + RandomToken.hash(username.lowercased()))
        let addressKey = ThrottleKey(rawValue: "address:" + ClientAddressBlock.of(clientAddress))
        let limits = [(accountKey, configuration.signInAttemptsPerAccount), (addressKey, configuration.signInAttemptsPerAddress)]
        var counted: [(ThrottleKey, Int, ThrottleWindow)] = []
        for (key, limit) in limits {
            counted.append((key, limit, try await throttles.recordFailure(key: key, at: now, window: configuration.signInWindow)))
        }
        if let (key, _, window) = counted.first(where: { $0.2.failures > $0.1 }) {
            let scope = key.rawValue.prefix(while: { $0 != ":" })
            event(.loginThrottled, ["scope": "\(scope)", "client_address": "\(clientAddress)"])
            return .throttled(retryAfter: window.secondsLeft(at: now))
        }
        let user = try await users.user(username: Username(rawValue: username))
        let valid: Bool
        do {
            if let user, user.hasPassword {
                valid = try await passwordHasher.verify(password, hash: user.passwordHash)
            } else {
                // Hash what was typed instead, the same work as a check, so that both failures
                // take as long (docs/threat-model.md T62); so for an account without a password.
                _ = try await passwordHasher.hash(password)
                valid = false
            }
        } catch let busy as PasswordHashingBusy {
            // Not checked: the attempt does not count.
            for (key, _) in limits { try await throttles.forgiveFailure(key: key, at: now) }
            event(.loginBusy, ["client_address": "\(clientAddress)"])
            return .busy(retryAfter: busy.retryAfter)
        }
        guard valid, let user else {
            event(
                .loginFailed,
                ["username_known": "\(user != nil)", "user_id": "\(user?.id ?? "")", "client_address": "\(clientAddress)"])
            return .failed
        }
        try await throttles.clearFailures(key: accountKey)
        try await throttles.forgiveFailure(key: addressKey, at: now)
        // Said only to someone who knows the password, so it reveals nothing to a guesser.
        guard user.disabledAt == nil else {
            event(.loginRefusedDisabled, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .disabled
        }
        return .valid(user)
    }

    /// Confirms that `session`'s signed-in `user` is the one at the keyboard, before a change that
    /// a stolen session must not make: their password when they use one (throttled as sign-in is),
    /// else (an account made by an upstream provider, or passwords turned off) a sign-in younger
    /// than the re-authentication window.
    func confirm(_ user: User, password: String?, session: BrowserSession, clientAddress: String) async throws
        -> IdentityConfirmation
    {
        guard configuration.usesPassword(user) else {
            return now.timeIntervalSince(session.createdAt) < configuration.adminReauthenticationWindow
                ? .confirmed : .signInTooOld
        }
        switch try await checkPassword(username: user.username.rawValue, password: password ?? "", clientAddress: clientAddress)
        {
        case .valid(let checked) where checked.id == user.id: return .confirmed
        case .throttled(let retryAfter): return .throttled(retryAfter: retryAfter)
        case .busy(let retryAfter): return .busy(retryAfter: retryAfter)
        default: return .wrongPassword
        }
    }

    /// What an account without a password is told when its sign-in is too old to confirm a change.
    static func signInAgain(_ configuration: ServerConfiguration) -> String {
        "Your sign-in here has no password, so a recent sign-in confirms this change. Sign out, sign in again, and "
            + "make it within \(Int(configuration.adminReauthenticationWindow / 60)) minutes."
    }

    /// `POST /logout`: checks the CSRF token, then ends the session and its pending requests.
    /// - Returns: `false` (403) when the CSRF token does not match.
    public func signOut(_ form: FormParameters, session: BrowserSession) async throws -> Bool {
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken) else {
            return false
        }
        try await sessions.signOutSession(idHash: session.idHash, at: now)
        if let userID = session.userID { event(.logout, ["user_id": "\(userID)"]) }
        return true
    }

    /// Whether the account has a second factor it can sign in with: a confirmed authenticator
    /// app or a passkey. Such an account signs in, and reaches apps and the console, with it only.
    func hasSecondFactor(_ userID: UserID) async throws -> Bool {
        if try await factors.secondFactors(userID: userID).contains(where: { $0.kind == .totp && $0.isActive }) {
            return true
        }
        return try await !factors.passkeys(userID: userID).isEmpty
    }

    /// Replaces `session` with a fresh one (no session fixation) signed in as `user` with
    /// `methods`, keeping its pending requests: after the second step, a passkey, or a step-up.
    /// With `keepingSignInTime`, the fresh session keeps the replaced one's creation, the time the
    /// password was typed: a code alone then renews neither the session's lifetime nor what counts
    /// as a recent password (`max_age`, the console's re-authentication).
    func signIn(
        _ user: User, with methods: AuthenticationMethods, replacing session: BrowserSession, keepingSignInTime: Bool
    ) async throws -> SessionContext {
        var (fresh, cookie) = makeSession(userID: user.id)
        carrySID(from: session, to: &fresh, for: user.id)
        if keepingSignInTime {
            fresh.createdAt = session.createdAt
            fresh.expiresAt = sessionEnd(createdAt: session.createdAt)
            fresh.lastSeenAt = now
        }
        fresh.accessEpoch = user.accessEpoch
        fresh.amr = methods
        try await sessions.replaceSession(oldIDHash: session.idHash, with: fresh)
        return SessionContext(session: fresh, newCookie: cookie)
    }

    /// The user a browser session is signed in as, if any (for the pages that greet them).
    public func signedInUser(_ session: BrowserSession) async throws -> User? {
        guard let userID = session.userID, let user = try await users.user(id: userID), user.disabledAt == nil else {
            return nil
        }
        return user
    }
}
