import Foundation
import LatchkeyCore

/// Why a sign-in or a token request failed. ``server(_:)`` means the authorization server said no
/// (sign in again or fix the request); ``network(_:)`` means it could not be reached (retry later).
public enum ClientError: Error, Sendable, CustomStringConvertible {
    /// The server answered with an RFC 6749 error (`access_denied`, `invalid_grant`, …).
    case server(OAuthError)
    /// The server could not be reached or answered with something that is not OAuth.
    case network(String)
    /// The redirect's `state` is missing or is not the one this flow sent (CSRF, RFC 6749 §10.12).
    case stateMismatch
    /// The redirect's `iss` is not the expected issuer, or is missing although the server
    /// promises it (mix-up defence, RFC 9207 §2.4).
    case issuerMismatch
    /// The redirect carries neither a code nor an error.
    case missingCode
    /// No redirect reached the loopback receiver in time.
    case timedOut
    /// There is no refresh token to refresh with.
    case noRefreshToken
    /// A response could not be understood.
    case invalidResponse(String)
    /// The ID token failed a check of OpenID Connect Core §3.1.3.7 (signature, issuer, audience,
    /// expiry, nonce, `at_hash`): the sign-in is not trusted.
    case invalidIDToken(String)
    /// A resource answered `401` `insufficient_user_authentication` (RFC 9470 §3): the token is
    /// good, but the user's sign-in is not strong or recent enough for it. Refreshing does not
    /// help (a refreshed token keeps the sign-in's `acr` and `auth_time`): start a new
    /// authorization with the challenge's `acr_values` and `max_age` (§4).
    case insufficientUserAuthentication(StepUpChallenge)

    public var description: String {
        switch self {
        case .server(let error): "The authorization server refused: \(error)"
        case .network(let message): "The authorization server could not be reached: \(message)"
        case .stateMismatch: "The redirect's state does not match this sign-in; it was not started here."
        case .issuerMismatch: "The redirect came from another authorization server than the one this sign-in used."
        case .missingCode: "The redirect carries no authorization code."
        case .timedOut: "No sign-in arrived in time; start again."
        case .noRefreshToken: "There is no refresh token; sign in again."
        case .invalidResponse(let message): "The server's response could not be understood: \(message)"
        case .invalidIDToken(let reason): "The ID token was refused: \(reason)."
        case .insufficientUserAuthentication(let challenge):
            "The resource needs a stronger or more recent sign-in (\(challenge)); sign in again with that."
        }
    }

    /// Whether the stored credentials are no good and the user must sign in again.
    public var requiresSignIn: Bool {
        switch self {
        case .server(let error): error.code == .invalidGrant || error.code == .invalidClient
        case .noRefreshToken: true
        default: false
        }
    }
}
