import Foundation
import LatchkeyCore

/// What the browser is shown at the logout endpoint.
public enum LogoutStep: Sendable {
    /// The request cannot be trusted (a bad `id_token_hint`, an unregistered
    /// `post_logout_redirect_uri`): a page, and no redirect.
    case errorPage(OAuthError)
    /// 403: a confirmation form without this session's CSRF token.
    case forbidden(String)
    /// Ask the user whether to sign out (no hint, or a hint for someone else's session).
    case confirm(LogoutConfirmation)
    /// Signed out, or there was no signed-in session (`ended` false): go to `redirect`, or show a
    /// page saying so.
    case signedOut(redirect: String?, clientName: String?, ended: Bool)
    /// The user chose to stay signed in.
    case stayedSignedIn
}

/// The confirmation page's contents; its form posts them back with `decision=logout`.
public struct LogoutConfirmation: Sendable {
    public var clientName: String?
    public var csrfToken: String
    /// Hidden fields carried to the form's answer.
    public var carried: [(name: String, value: String)]
}

/// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0, `/oauth2/logout`): reads clients
/// and ID token hints, and ends the browser's session.
public struct LogoutEndpoint: Sendable {
    let requests: AuthorizationRequestValidator
    let clients: any ClientStore
    let sessions: any SessionStore & LogoutDeliveryStore
    let context: ServerContext
    /// `GET` or `POST /oauth2/logout` (OpenID Connect RP-Initiated Logout 1.0 §2–§3): ends the
    /// Latchkey session, then returns to `post_logout_redirect_uri` with `state` when that URI is
    /// registered for the client exactly. Without an `id_token_hint` that matches the session, the
    /// user is asked first, so a link on another site cannot sign anyone out; a browser that was
    /// not signed in is redirected only with a valid `id_token_hint`, and only to an app an
    /// administrator registered.
    public func logout(_ parameters: FormParameters, session: BrowserSession) async throws -> LogoutStep {
        if let name = parameters.repeatedNames.first {
            return .errorPage(.invalidRequest("The \(name) parameter was given more than once."))
        }
        var hinted: IDTokenClaims?
        if let hint = parameters["id_token_hint"] {
            guard let claims = try await requests.idTokenHint(hint) else {
                return .errorPage(.invalidRequest("The id_token_hint is not an ID token this server issued."))
            }
            hinted = claims
        }
        let clientID = parameters["client_id"] ?? hinted?.aud
        if let given = parameters["client_id"], let hinted, given != hinted.aud {
            return .errorPage(.invalidRequest("The client_id is not the audience of the id_token_hint."))
        }
        let client = try await clientID.asyncFlatMap { try await clients.client(id: ClientID(rawValue: $0)) }.flatMap {
            requests.documents.isAllowed($0) ? $0 : nil
        }
        if clientID != nil, client == nil {
            return .errorPage(.invalidRequest("The client_id does not name a registered application."))
        }
        var redirect: String?
        if let uri = parameters["post_logout_redirect_uri"] {
            guard let client else {
                return .errorPage(
                    .invalidRequest("A post_logout_redirect_uri needs an id_token_hint or client_id to say whose it is."))
            }
            guard client.postLogoutRedirectURIs.contains(uri) else {
                return .errorPage(.invalidRequest("The post_logout_redirect_uri is not registered for this application."))
            }
            redirect = RedirectURI.appending(parameters["state"].map { [("state", $0)] } ?? [], to: uri, inFragment: false)
        }

        let confirmed: Bool
        if parameters["decision"] != nil {
            guard let csrf = parameters["csrf_token"], ConstantTime.equals(csrf, session.csrfToken) else {
                return .forbidden("This form has expired or did not come from this site. Reload the page and try again.")
            }
            guard parameters["decision"] == "logout" else {
                return .stayedSignedIn
            }
            confirmed = true
        } else {
            confirmed = hinted.map { session.userID?.rawValue == $0.sub } ?? false
        }
        if session.userID != nil, !confirmed {
            let carried = ["post_logout_redirect_uri", "state", "client_id", "id_token_hint"].compactMap { name in
                parameters[name].map { (name: name, value: $0) }
            }
            return .confirm(LogoutConfirmation(clientName: client?.name, csrfToken: session.csrfToken, carried: carried))
        }
        // §3: no redirection without the user's own confirmation or an id_token_hint. A browser
        // that was not signed in confirmed nothing, and a hint proves only that someone once signed
        // in to the app: for an app whose URIs a user or the app itself chose (a personal,
        // self-registered or metadata-document app) it would make a lasting open redirect, so such
        // a browser is sent back only to an app an administrator registered (docs/threat-model.md RV10).
        let administered = client.map { $0.registration == .administrator && $0.ownerUserID == nil } ?? false
        let trusted = parameters["decision"] == "logout" || (hinted != nil && (session.userID != nil || administered))
        if let userID = session.userID {
            try await sessions.signOutSession(idHash: session.idHash, at: context.now)
            context.event(.logout, ["user_id": "\(userID)", "client_id": "\(client?.id.rawValue ?? "")"])
            return .signedOut(redirect: trusted ? redirect : nil, clientName: client?.name, ended: true)
        }
        // Halfway through sign-in (the password checked, the second step owed): that ends too.
        if session.secondFactorUserID != nil { try await sessions.deleteSession(idHash: session.idHash) }
        return .signedOut(redirect: trusted ? redirect : nil, clientName: client?.name, ended: false)
    }
}

extension Optional {
    func asyncFlatMap<U>(_ transform: (Wrapped) async throws -> U?) async rethrows -> U? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
