import Foundation
import LatchkeyCore

/// A refusal of a request to a protected resource, as RFC 6750 §3 puts it on the wire.
public struct BearerChallenge: Sendable, Equatable, Error {
    /// 401 for a missing or bad token or a sign-in that falls short, 403 for a token without the
    /// scope, 400 for a malformed request.
    public var status: Int
    /// `error`: `invalid_token`, `insufficient_scope`, `invalid_request`, or
    /// `insufficient_user_authentication` (RFC 9470 §3); `nil` when the request carried no token
    /// at all (§3.1).
    public var error: String?
    /// `error_description`: for the client's developer.
    public var errorDescription: String?
    /// `scope`: the scopes the resource needs, for `insufficient_scope`.
    public var scope: [String]
    /// `resource_metadata` (RFC 9728 §5.1): where the client finds out how to get a token.
    public var resourceMetadata: String
    /// The challenge's scheme: `Bearer` (RFC 6750), or `DPoP` (RFC 9449 §7.1) for a request that
    /// came with a DPoP-bound token; its challenge also names the accepted `algs`.
    public var scheme: String
    /// `acr_values` (RFC 9470 §3): for `insufficient_user_authentication`, the authentication
    /// context classes the resource accepts, any one of them; sent space-separated.
    public var acrValues: [String]
    /// `max_age` (RFC 9470 §3): for `insufficient_user_authentication`, the most seconds since the
    /// user signed in that the resource accepts.
    public var maxAge: Int?

    public init(
        status: Int, error: String?, errorDescription: String?, scope: [String], resourceMetadata: String,
        scheme: String = "Bearer", acrValues: [String] = [], maxAge: Int? = nil
    ) {
        self.scheme = scheme
        self.acrValues = acrValues
        self.maxAge = maxAge
        self.status = status
        self.error = error
        self.errorDescription = errorDescription
        self.scope = scope
        self.resourceMetadata = resourceMetadata
    }

    /// A JSON body repeating `error` and `error_description`, or `{}` when there is no error.
    public var jsonBody: String {
        guard let error else { return "{}" }
        var body = #"{"error":""# + Self.quoted(error) + #"""#
        if let errorDescription { body += #","error_description":""# + Self.quoted(errorDescription) + #"""# }
        return body + "}"
    }

    /// The `WWW-Authenticate` header value.
    public var wwwAuthenticate: String {
        var parameters = [("resource_metadata", resourceMetadata)]
        if scheme == "DPoP" { parameters.insert(("algs", DPoPProof.algorithms.joined(separator: " ")), at: 0) }
        if let error { parameters.append(("error", error)) }
        if let errorDescription { parameters.append(("error_description", errorDescription)) }
        if !scope.isEmpty { parameters.append(("scope", scope.joined(separator: " "))) }
        if !acrValues.isEmpty { parameters.append(("acr_values", acrValues.joined(separator: " "))) }
        if let maxAge { parameters.append(("max_age", String(maxAge))) }
        return scheme + " " + parameters.map { "\($0.0)=\"\(Self.quoted($0.1))\"" }.joined(separator: ", ")
    }

    /// A quoted-string's content: printable ASCII without `"` or `\` (RFC 6750 §3's grammar for
    /// `error_description`); anything else becomes `?`.
    static func quoted(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" ? scalar : "?"
                }))
    }
}
