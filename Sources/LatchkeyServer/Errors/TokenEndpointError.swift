import LatchkeyCore

/// The failure of a request to one of the endpoints a client authenticates at: the token endpoint
/// (RFC 6749 §5.2), revocation (RFC 7009 §2.2.1) and introspection (RFC 7662 §2.3). Its body is
/// the RFC 6749 §5.2 JSON error; the status follows ``OAuthError/status``, with two additions:
/// a client that tried HTTP Basic gets `WWW-Authenticate: Basic` on a 401, and a throttled client
/// gets 429 with `Retry-After`.
public struct TokenEndpointError: Error, Sendable {
    public var error: OAuthError
    /// Whether the request carried an `Authorization` header (then a 401 carries
    /// `WWW-Authenticate: Basic`, RFC 6749 §5.2).
    public var usedBasicAuthentication: Bool
    /// Set when the client is throttled: answer 429 with `Retry-After` of this many seconds.
    public var retryAfter: Int?
    /// With `use_dpop_nonce`: the nonce for the `DPoP-Nonce` header (RFC 9449 §8).
    public var dpopNonce: String?

    public init(
        _ error: OAuthError, usedBasicAuthentication: Bool = false, retryAfter: Int? = nil, dpopNonce: String? = nil
    ) {
        self.dpopNonce = dpopNonce
        self.error = error
        self.usedBasicAuthentication = usedBasicAuthentication
        self.retryAfter = retryAfter
    }
}
