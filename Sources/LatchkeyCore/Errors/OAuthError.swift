/// An error as RFC 6749 puts it on the wire: a code from §4.1.2.1 / §5.2 and a description that is
/// safe to show the client. Internal causes are logged, never rendered.
public struct OAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An RFC 6749 error code (`error`). A struct rather than an enum so codes can be added freely.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// §4.1.2.1, §5.2: missing, repeated or malformed parameter.
        public static let invalidRequest = Code(rawValue: "invalid_request")
        /// §5.2: client authentication failed (HTTP 401).
        public static let invalidClient = Code(rawValue: "invalid_client")
        /// §5.2: the code, refresh token or verifier is invalid, expired, revoked or not this client's.
        public static let invalidGrant = Code(rawValue: "invalid_grant")
        /// §4.1.2.1, §5.2: the client may not use this grant or response type.
        public static let unauthorizedClient = Code(rawValue: "unauthorized_client")
        /// §5.2: the server does not support the grant type.
        public static let unsupportedGrantType = Code(rawValue: "unsupported_grant_type")
        /// §4.1.2.1: the server does not support the response type.
        public static let unsupportedResponseType = Code(rawValue: "unsupported_response_type")
        /// §4.1.2.1, §5.2: unknown, malformed or not allowed scope.
        public static let invalidScope = Code(rawValue: "invalid_scope")
        /// §4.1.2.1: the resource owner or the server denied the request.
        public static let accessDenied = Code(rawValue: "access_denied")
        /// §4.1.2.1: an unexpected condition.
        public static let serverError = Code(rawValue: "server_error")
        /// §4.1.2.1: the server is temporarily unable to handle the request.
        public static let temporarilyUnavailable = Code(rawValue: "temporarily_unavailable")
        /// RFC 6750 §3.1: the access token is expired, revoked, malformed or invalid.
        public static let invalidToken = Code(rawValue: "invalid_token")
        /// RFC 6750 §3.1: the token lacks the scope the resource needs.
        public static let insufficientScope = Code(rawValue: "insufficient_scope")
        /// OpenID Connect Core §3.1.2.6: `prompt=none`, but the user must sign in.
        public static let loginRequired = Code(rawValue: "login_required")
        /// OpenID Connect Core §3.1.2.6: `prompt=none`, but the user must consent.
        public static let consentRequired = Code(rawValue: "consent_required")
        /// OpenID Connect Core §3.1.2.6: `prompt=none`, but a page would have to be shown.
        public static let interactionRequired = Code(rawValue: "interaction_required")
        /// OpenID Connect Core §3.1.2.6: request objects (`request`) are not supported.
        public static let requestNotSupported = Code(rawValue: "request_not_supported")
        /// OpenID Connect Core §3.1.2.6: `request_uri` is not supported.
        public static let requestURINotSupported = Code(rawValue: "request_uri_not_supported")
        /// RFC 8707 §2: the `resource` is invalid, unknown, malformed, or not one this request may name.
        public static let invalidTarget = Code(rawValue: "invalid_target")
        /// RFC 7591 §3.2.2: a registration's `redirect_uris` holds a value that is not allowed.
        public static let invalidRedirectURI = Code(rawValue: "invalid_redirect_uri")
        /// RFC 7591 §3.2.2: a member of the registration request is invalid.
        public static let invalidClientMetadata = Code(rawValue: "invalid_client_metadata")
        /// RFC 8628 §3.5: the user has not yet finished at the verification URI; poll again.
        public static let authorizationPending = Code(rawValue: "authorization_pending")
        /// RFC 8628 §3.5: polling too fast; wait 5 seconds more between polls from now on.
        public static let slowDown = Code(rawValue: "slow_down")
        /// RFC 8628 §3.5: the device code expired; start a new device authorization request.
        public static let expiredToken = Code(rawValue: "expired_token")
        /// RFC 9449 §5, §7.1: the DPoP proof is missing, invalid, replayed or made with another key.
        public static let invalidDPoPProof = Code(rawValue: "invalid_dpop_proof")
        /// RFC 9449 §8, §9: make the proof again with the nonce in the `DPoP-Nonce` header.
        public static let useDPoPNonce = Code(rawValue: "use_dpop_nonce")
    }

    /// The `error` value.
    public var code: Code
    /// The `error_description` value: a sentence a developer can act on, never secret material.
    public var errorDescription: String?

    /// - Parameter errorDescription: made to fit RFC 6749's grammar for it (§4.1.2.1, §5.2:
    ///   `%x20-21 / %x23-5B / %x5D-7E`): a double quote becomes `'`, anything else outside it
    ///   (control characters, a backslash, non-ASCII echoed from a request) becomes `?`.
    public init(_ code: Code, _ errorDescription: String? = nil) {
        self.code = code
        self.errorDescription = errorDescription.map(Self.descriptionText)
    }

    static func descriptionText(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: scalars.append("'")
            case 0x20...0x21, 0x23...0x5B, 0x5D...0x7E: scalars.append(scalar)
            default: scalars.append("?")
            }
        }
        return String(scalars)
    }

    public var description: String {
        errorDescription.map { "\(code.rawValue): \($0)" } ?? code.rawValue
    }

    /// The HTTP status for this error at the token endpoint (RFC 6749 §5.2): 401 for
    /// `invalid_client`, 503 for `temporarily_unavailable`, 500 for `server_error`, else 400.
    public var tokenEndpointStatus: Int {
        switch code {
        case .invalidClient: 401
        case .temporarilyUnavailable: 503
        case .serverError: 500
        default: 400
        }
    }

    /// The JSON body of RFC 6749 §5.2, with keys in a fixed order.
    public var jsonBody: String {
        var body = #"{"error":"# + JSONText.quote(code.rawValue)
        if let errorDescription {
            body += #","error_description":"# + JSONText.quote(errorDescription)
        }
        return body + "}"
    }

    /// The parameters of an error redirect (RFC 6749 §4.1.2.1).
    public var redirectParameters: [(String, String)] {
        var parameters = [("error", code.rawValue)]
        if let errorDescription { parameters.append(("error_description", errorDescription)) }
        return parameters
    }
}

public extension OAuthError {
    static func invalidRequest(_ description: String) -> OAuthError { OAuthError(.invalidRequest, description) }
    static func invalidGrant(_ description: String) -> OAuthError { OAuthError(.invalidGrant, description) }
    static func invalidClient(_ description: String) -> OAuthError { OAuthError(.invalidClient, description) }
    static func invalidScope(_ description: String) -> OAuthError { OAuthError(.invalidScope, description) }
}
