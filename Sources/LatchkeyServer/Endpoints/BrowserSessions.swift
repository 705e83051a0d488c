import Foundation
import LatchkeyCore

/// A browser session and, when it was just created, the cookie value to send.
public struct SessionContext: Sendable {
    public var session: BrowserSession
    /// Set when the browser must be given a new session cookie.
    public var newCookie: String?
    /// How long the session had gone unused before this request (to the minute: use is recorded
    /// at most once a minute). The admin console's shorter idle timeout reads it.
    public var idle: TimeInterval = 0
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
    /// Signed in with a fresh session; continue with the pending request, if any.
    case signedIn(SessionContext, pendingID: String?)
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

extension AuthorizationServer {
    /// The session named by the cookie while it is within both its absolute lifetime and its idle
    /// timeout, or else a new anonymous one (which carries the CSRF token the login form needs).
    public func session(cookie: String?) async throws -> SessionContext {
        if let cookie, var session = try await store.session(idHash: SessionIDHash(of: cookie)) {
            let now = self.now
            let idle = now.timeIntervalSince(session.lastSeenAt)
            if session.expiresAt > now, idle < configuration.sessionIdleTimeout {
                // Recorded at most once a minute, so browsing does not write on every page.
                if idle >= 60 {
                    try await store.touchSession(idHash: session.idHash, at: now)
                    session.lastSeenAt = now
                }
                return SessionContext(session: session, newCookie: nil, idle: idle)
            }
            try await store.deleteSession(idHash: session.idHash)
            if session.userID != nil { event("session.expired", ["user_id": "\(session.userID ?? "")"]) }
        }
        let (session, value) = makeSession(userID: nil)
        try await store.insertSession(session)
        return SessionContext(session: session, newCookie: value)
    }

    func makeSession(userID: UserID?) -> (BrowserSession, cookie: String) {
        let value = RandomToken.generate(.session)
        let session = BrowserSession(
            idHash: SessionIDHash(of: value), userID: userID, csrfToken: RandomToken.generate(.csrf), createdAt: now,
            expiresAt: now.addingTimeInterval(configuration.sessionLifetime))
        return (session, value)
    }

    /// `POST /login`: checks the CSRF token and the credentials (``checkPassword(username:password:clientAddress:)``),
    /// then replaces the session with a fresh one (no session fixation) that keeps the pending requests.
    public func signIn(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws -> SignInResult {
        let pendingID = form.isRepeated("request") ? nil : form["request"]
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken)
        else {
            return .forbidden("This form has expired or did not come from this site. Reload the page and try again.")
        }
        let username = form["username"] ?? ""
        switch try await checkPassword(username: username, password: form["password"] ?? "", clientAddress: clientAddress) {
        case .throttled(let retryAfter): return .throttled(pendingID: pendingID, retryAfter: retryAfter)
        case .busy(let retryAfter): return .busy(pendingID: pendingID, retryAfter: retryAfter)
        case .failed: return .failed(pendingID: pendingID)
        case .disabled: return .disabled(pendingID: pendingID)
        case .valid(let user):
            let (fresh, cookie) = makeSession(userID: user.id)
            try await store.replaceSession(oldIDHash: session.idHash, with: fresh)
            event("login.succeeded", ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .signedIn(SessionContext(session: fresh, newCookie: cookie), pendingID: pendingID)
        }
    }

    /// Checks a username and password as sign-in does, with its throttling: failures are counted
    /// per account and per client address in the store, so every instance sees them
    /// (docs/threat-model.md T62). Over either limit the password is not even checked, and the
    /// answer is the same whether or not the account exists.
    func checkPassword(username: String, password: String, clientAddress: String) async throws -> PasswordCheck {
        // The account key is a hash, so the table holds no usernames (nor whatever was typed).
        let accountKey = "account:" + RandomToken.hash(username.lowercased())
        let addressKey = "address:" + clientAddress
        let limits = [(accountKey, configuration.signInAttemptsPerAccount), (addressKey, configuration.signInAttemptsPerAddress)]
        for (key, limit) in limits {
            if let window = try await store.failures(key: ThrottleKey(rawValue: key), at: now), window.failures >= limit {
                event("login.throttled", ["scope": "\(key.prefix(while: { $0 != ":" }))", "client_address": "\(clientAddress)"])
                return .throttled(retryAfter: window.secondsLeft(at: now))
            }
        }
        let user = try await store.user(username: Username(rawValue: username))
        let valid: Bool
        do {
            if let user {
                valid = try await passwordHasher.verify(password, hash: user.passwordHash)
            } else {
                // Hash what was typed instead, the same work as a check, so that both failures
                // take as long (docs/threat-model.md T62).
                _ = try await passwordHasher.hash(password)
                valid = false
            }
        } catch let busy as PasswordHashingBusy {
            event("login.busy", ["client_address": "\(clientAddress)"])
            return .busy(retryAfter: busy.retryAfter)
        }
        guard valid, let user else {
            for (key, _) in limits {
                _ = try await store.recordFailure(key: ThrottleKey(rawValue: key), at: now, window: configuration.signInWindow)
            }
            event(
                "login.failed",
                ["username_known": "\(user != nil)", "user_id": "\(user?.id ?? "")", "client_address": "\(clientAddress)"])
            return .failed
        }
        try await store.clearFailures(key: ThrottleKey(rawValue: accountKey))
        // Said only to someone who knows the password, so it reveals nothing to a guesser.
        guard user.disabledAt == nil else {
            event("login.refused_disabled", ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .disabled
        }
        return .valid(user)
    }

    /// `POST /logout`: checks the CSRF token, then ends the session and its pending requests.
    /// - Returns: `false` (403) when the CSRF token does not match.
    public func signOut(_ form: FormParameters, session: BrowserSession) async throws -> Bool {
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken) else {
            return false
        }
        try await store.deleteSession(idHash: session.idHash)
        if let userID = session.userID { event("logout", ["user_id": "\(userID)"]) }
        return true
    }
}
