import Foundation
import LatchkeyCore

/// The OpenID Connect parameters of an authorization request (OpenID Connect Core §3.1.2.1) that
/// change what Latchkey does. `display`, `ui_locales`, `claims_locales` and `acr_values` are
/// accepted and have no effect (the pages have one layout, in one language, and one way to sign in).
public struct OpenIDRequestParameters: Sendable, Equatable {
    /// `prompt`: its values.
    public enum Prompt: String, Sendable, CaseIterable {
        /// Show no page: answer at once or with `login_required` / `consent_required`.
        case none
        /// Ask for the password again, even with a session.
        case login
        /// Ask for consent again, even when it is remembered.
        case consent
        /// Latchkey has one account per browser: asking to pick one is asking to sign in again.
        case selectAccount = "select_account"
        /// Open sign-up rather than sign-in (OpenID Connect Prompt Create 1.0 §4.1), while sign-up
        /// is open; refused as unsupported otherwise.
        case create
    }

    public var nonce: String?
    public var prompt: Set<Prompt> = []
    /// `max_age`: the sign-in must be at most this many seconds old.
    public var maxAge: Int?
    /// `login_hint`: prefills the username.
    public var loginHint: String?
    /// `idp_hint` (or Keycloak's `kc_idp_hint`): the name of an upstream identity provider to
    /// send the user to at once instead of the sign-in page (docs/accounts.md).
    public var identityProviderHint: String?
    /// `acr_values` (OpenID Connect Core §3.1.2.1): the level of sign-in asked for, when the
    /// values name one Latchkey knows (``AuthenticationLevel/demanded(by:)``).
    public var requiredLevel: AuthenticationLevel?
    /// `id_token_hint`'s `sub`, once the hint was verified as an ID token this server issued to the client.
    public var hintedSubject: UserID?

    public init() {}

    /// Whether the user must enter the password again although the session is signed in.
    public var demandsSignIn: Bool { prompt.contains(.login) || prompt.contains(.selectAccount) }
}

extension AuthorizationRequestValidator {
    /// `prompt_values_supported`: every value, `create` only while anyone may sign up.
    static func promptValuesSupported(_ configuration: ServerConfiguration) -> [OpenIDRequestParameters.Prompt] {
        OpenIDRequestParameters.Prompt.allCases.filter { $0 != .create || configuration.signUp.mode == .open }
    }

    /// Reads the OpenID Connect parameters once the redirect URI is trusted.
    /// - Returns: the parameters, or the error to send back to the client.
    func openIDParameters(_ parameters: FormParameters, client: Client) async throws
        -> Result<OpenIDRequestParameters, OAuthError>
    {
        // Request objects are not supported (OpenID Connect Core §6): say so rather than ignore them.
        if parameters["request"] != nil {
            return .failure(OAuthError(.requestNotSupported, "Request objects (the request parameter) are not supported."))
        }
        if parameters["request_uri"] != nil {
            return .failure(OAuthError(.requestURINotSupported, "The request_uri parameter is not supported."))
        }
        var result = OpenIDRequestParameters()
        if let nonce = parameters["nonce"] {
            guard !nonce.isEmpty, !nonce.hasNUL else {
                return .failure(.invalidRequest("The nonce parameter is empty or malformed."))
            }
            result.nonce = nonce
        }
        if let text = parameters["prompt"] {
            for word in text.split(separator: " ") {
                let supported = Self.promptValuesSupported(configuration)
                guard let value = OpenIDRequestParameters.Prompt(rawValue: String(word)), supported.contains(value)
                else {
                    return .failure(
                        .invalidRequest(
                            "The prompt value \(word) is not one of \(supported.map(\.rawValue).joined(separator: ", "))."))
                }
                result.prompt.insert(value)
            }
            if result.prompt.contains(.create), result.prompt.count > 1 {
                return .failure(.invalidRequest("prompt=create cannot be combined with other prompt values."))
            }
            if result.prompt.contains(.none), result.prompt.count > 1 {
                return .failure(.invalidRequest("prompt=none cannot be combined with other prompt values."))
            }
        }
        if let text = parameters["max_age"] {
            guard let seconds = Int(text), seconds >= 0 else {
                return .failure(.invalidRequest("The max_age parameter must be a whole number of seconds."))
            }
            result.maxAge = seconds
        }
        result.loginHint = parameters["login_hint"].flatMap { $0.hasNUL ? nil : $0 }
        result.identityProviderHint = (parameters["idp_hint"] ?? parameters["kc_idp_hint"]).flatMap {
            Federation.isValidName($0) ? $0 : nil
        }
        if let text = parameters["acr_values"] {
            result.requiredLevel = AuthenticationLevel.demanded(by: text.split(separator: " ").map(String.init))
        }
        if let hint = parameters["id_token_hint"] {
            guard let claims = try await idTokenHint(hint), claims.aud == client.id.rawValue else {
                return .failure(.invalidRequest("The id_token_hint is not an ID token this server issued to this application."))
            }
            result.hintedSubject = UserID(rawValue: claims.sub)
        }
        return .success(result)
    }

    /// The claims of `hint` when it is an ID token this server signed (`typ` `JWT`): not a JWT
    /// access token (`at+jwt`, RFC 9068 §2.1) nor a logout token (`logout+jwt`), which the same
    /// keys sign (docs/threat-model.md RV12, BL3).
    func idTokenHint(_ hint: String) async throws -> IDTokenClaims? {
        guard JWSHeader(hint)?.isIDTokenType == true else { return nil }
        guard let claims = try await signingKeys.verify(hint, as: IDTokenClaims.self, at: context.now),
            claims.iss == context.issuer
        else {
            return nil
        }
        return claims
    }
}

extension AuthorizationEndpoint {
    /// The session's user when it signed in recently enough for `pending` (`prompt=login`,
    /// `max_age`, or a hint naming someone else, which all set `authenticatedAfter`); whether that
    /// user is the one an `id_token_hint` named is checked when the request proceeds.
    func signedInUser(_ session: BrowserSession, for pending: PendingAuthorization) -> UserID? {
        guard let userID = session.userID else { return nil }
        // Strictly after: prompt=login wants a sign-in made after the request itself.
        if let after = pending.authenticatedAfter, session.createdAt <= after { return nil }
        return userID
    }
}
