import Foundation
import LatchkeyCore

/// A browser session and, when it was just created, the cookie value to send.
public struct SessionContext: Sendable {
    public var session: BrowserSession
    /// Set when the browser must be given a new session cookie.
    public var newCookie: String?
}

/// The result of `POST /login`.
public enum SignInResult: Sendable {
    /// 403: the CSRF token did not match this session.
    case forbidden(String)
    /// Wrong username or password (one message for both, so usernames cannot be probed).
    case failed(pendingID: String?)
    /// Signed in with a fresh session; continue with the pending request, if any.
    case signedIn(SessionContext, pendingID: String?)
}

extension AuthorizationServer {
    /// The session named by the cookie, or a new anonymous one (which carries the CSRF token the
    /// login form needs).
    public func session(cookie: String?) async throws -> SessionContext {
        if let cookie, let session = try await store.session(idHash: RandomToken.hash(cookie)), session.expiresAt > now {
            return SessionContext(session: session, newCookie: nil)
        }
        let (session, value) = makeSession(userID: nil)
        try await store.insertSession(session)
        return SessionContext(session: session, newCookie: value)
    }

    func makeSession(userID: String?) -> (BrowserSession, cookie: String) {
        let value = RandomToken.generate(.session)
        let session = BrowserSession(
            idHash: RandomToken.hash(value), userID: userID, csrfToken: RandomToken.generate(.csrf), createdAt: now,
            expiresAt: now.addingTimeInterval(configuration.sessionLifetime))
        return (session, value)
    }

    /// `POST /login`: checks the CSRF token and the credentials, then replaces the session with a
    /// fresh one (no session fixation) that keeps the pending requests.
    public func signIn(_ form: FormParameters, session: BrowserSession) async throws -> SignInResult {
        let pendingID = form.isRepeated("request") ? nil : form["request"]
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken)
        else {
            return .forbidden("This form has expired or did not come from this site. Reload the page and try again.")
        }
        let username = form["username"] ?? ""
        let password = form["password"] ?? ""
        let user = try await store.user(username: username)
        // Verify against a fixed hash when the user is unknown, so both failures take as long.
        let valid = passwordHasher.verify(password, hash: user?.passwordHash ?? unknownUserHash) && user != nil
        guard valid, let user else {
            event("login.failed", ["username_known": "\(user != nil)"])
            return .failed(pendingID: pendingID)
        }
        let (fresh, cookie) = makeSession(userID: user.id)
        try await store.replaceSession(oldIDHash: session.idHash, with: fresh)
        event("login.succeeded", ["user_id": "\(user.id)"])
        return .signedIn(SessionContext(session: fresh, newCookie: cookie), pendingID: pendingID)
    }
}
