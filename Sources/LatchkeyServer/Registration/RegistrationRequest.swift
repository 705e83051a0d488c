import Foundation
import LatchkeyCore

/// The client metadata of a registration request (RFC 7591 §2), read leniently as §2 asks: members
/// Latchkey does not know are ignored; members it knows must have the right JSON type.
struct RegistrationRequest {
    var redirectURIs: [String]
    var clientName: String?
    var scope: String?
    var grantTypes: [String]?
    var responseTypes: [String]?
    var tokenEndpointAuthMethod: String?
    var applicationType: String?
    var logoURI: String?
    var policyURI: String?
    var idTokenSignedResponseAlg: String?
    var postLogoutRedirectURIs: [String]
    /// `require_pushed_authorization_requests` (RFC 9126 §6).
    var requirePushedAuthorizationRequests: Bool
    /// Members present in the request, for RFC 7592 §2.2's rules on what an update may send.
    var members: Set<String>
    var clientID: String?
    var clientSecret: String?
    /// `jwks` (as JSON text) or `jwks_uri`, for `private_key_jwt`.
    var keys: ClientKeys?
    /// `backchannel_logout_uri` (OpenID Connect Back-Channel Logout 1.0 §2.2).
    var backchannelLogoutURI: String?

    /// The largest registration request read, in bytes.
    static let maximumSize = 16 * 1024

    init(_ body: [UInt8]) throws(AdministrationError) {
        guard body.count <= Self.maximumSize,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { throw AdministrationError("The body must be one JSON object of at most 16 KiB.") }
        func string(_ name: String) throws(AdministrationError) -> String? {
            guard let value = object[name], !(value is NSNull) else { return nil }
            guard let text = value as? String else { throw AdministrationError("\(name) must be a string.", field: name) }
            return text
        }
        func strings(_ name: String) throws(AdministrationError) -> [String]? {
            guard let value = object[name], !(value is NSNull) else { return nil }
            guard let list = value as? [Any], let texts = list as? [String] else {
                throw AdministrationError("\(name) must be an array of strings.", field: name)
            }
            return texts
        }
        redirectURIs = try strings("redirect_uris") ?? []
        clientName = try string("client_name")
        scope = try string("scope")
        grantTypes = try strings("grant_types")
        responseTypes = try strings("response_types")
        tokenEndpointAuthMethod = try string("token_endpoint_auth_method")
        applicationType = try string("application_type")
        logoURI = try string("logo_uri")
        policyURI = try string("policy_uri")
        idTokenSignedResponseAlg = try string("id_token_signed_response_alg")
        postLogoutRedirectURIs = try strings("post_logout_redirect_uris") ?? []
        backchannelLogoutURI = try string("backchannel_logout_uri")
        switch object["require_pushed_authorization_requests"] {
        case nil, is NSNull: requirePushedAuthorizationRequests = false
        case let value as Bool:
            requirePushedAuthorizationRequests = value
        default:
            throw AdministrationError(
                "require_pushed_authorization_requests must be true or false.", field: "require_pushed_authorization_requests")
        }
        clientID = try string("client_id")
        clientSecret = try string("client_secret")
        members = Set(object.keys)
        let jwksURI = try string("jwks_uri")
        var jwks: String?
        switch object["jwks"] {
        case nil, is NSNull: jwks = nil
        case let set as [String: Any]:
            guard let data = try? JSONSerialization.data(withJSONObject: set, options: [.sortedKeys]) else {
                throw AdministrationError("jwks must be a JSON Web Key Set.", field: "jwks")
            }
            jwks = String(decoding: data, as: UTF8.self)
        default:
            throw AdministrationError("jwks must be a JSON Web Key Set object (RFC 7517 §5).", field: "jwks")
        }
        // RFC 7591 §2: the two MUST NOT both be present.
        if jwks != nil, jwksURI != nil {
            throw AdministrationError("Send jwks or jwks_uri, not both (RFC 7591 §2).", field: "jwks")
        }
        keys = ClientKeys(jwks: jwks, jwksURI: jwksURI)
    }

    /// The settings to register, under `policy`: the client's type follows from
    /// `token_endpoint_auth_method` and `application_type`; open registration takes only public
    /// native clients whose redirect URIs stay on the device.
    func settings(openRegistration: Bool, defaultScopes: [String]) throws(AdministrationError) -> ClientSettings {
        let method = tokenEndpointAuthMethod ?? (applicationType == "web" && !openRegistration ? "client_secret_basic" : "none")
        let type: ClientType
        switch (method, applicationType ?? "native") {
        case ("none", "native"): type = .native
        case ("none", "web"): type = .browser
        case ("client_secret_basic", "web"), ("client_secret_post", "web"), ("private_key_jwt", "web"): type = .web
        case ("client_secret_basic", _), ("client_secret_post", _), ("private_key_jwt", _):
            throw AdministrationError(
                "A native app cannot keep a secret: use token_endpoint_auth_method none with PKCE.",
                field: "token_endpoint_auth_method")
        case (_, "native"), (_, "web"):
            throw AdministrationError(
                "token_endpoint_auth_method must be none, client_secret_basic, client_secret_post or private_key_jwt.",
                field: "token_endpoint_auth_method")
        default:
            throw AdministrationError("application_type must be native or web.", field: "application_type")
        }
        // Keys go with private_key_jwt, and private_key_jwt with keys.
        if (method == "private_key_jwt") != (keys != nil) {
            throw AdministrationError(
                keys == nil
                    ? "token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri."
                    : "jwks and jwks_uri are for token_endpoint_auth_method private_key_jwt.",
                field: keys == nil ? "token_endpoint_auth_method" : (keys?.jwks == nil ? "jwks_uri" : "jwks"))
        }
        if openRegistration {
            guard type == .native else {
                throw AdministrationError(
                    "Open registration takes public native apps only (application_type native, token_endpoint_auth_method none); ask for an initial access token to register a web app.",
                    field: type == .web ? "token_endpoint_auth_method" : "application_type")
            }
            for uri in redirectURIs where !Self.staysOnDevice(uri) {
                throw AdministrationError(
                    "Redirect URI \(uri): open registration takes loopback (http://127.0.0.1:PORT/…, http://[::1]:PORT/…) or private-use-scheme (com.example.app:/…) redirect URIs only.",
                    field: "redirect_uris")
            }
            // Logout redirects happen without a consent page: an app nobody vetted must not be
            // able to send a browser to a web site of its choosing (an open redirect).
            for uri in postLogoutRedirectURIs where !Self.staysOnDevice(uri) {
                throw AdministrationError(
                    "Post-logout redirect URI \(uri): open registration takes loopback or private-use-scheme URIs only.",
                    field: "post_logout_redirect_uris")
            }
        }
        // Latchkey issues codes, and refresh tokens with them, and lets an app ask for the device
        // grant (RFC 8628); nothing else is registered here.
        let registrable = [
            GrantTypes.authorizationCode, GrantTypes.refreshToken, GrantTypes.deviceCode, GrantTypes.tokenExchange,
        ]
        if let grants = grantTypes, let other = grants.first(where: { !registrable.contains($0) }) {
            throw AdministrationError(
                "The grant type \(other) cannot be registered here: clients register for authorization_code, refresh_token, "
                    + "\(GrantTypes.deviceCode) and \(GrantTypes.tokenExchange).",
                field: "grant_types")
        }
        if let responses = responseTypes, responses != ["code"] {
            throw AdministrationError("response_types must hold code only.", field: "response_types")
        }
        var algorithm = SigningAlgorithm.rs256
        if let named = idTokenSignedResponseAlg {
            guard let known = SigningAlgorithm(rawValue: named) else {
                throw AdministrationError(
                    "id_token_signed_response_alg must be RS256 or ES256.", field: "id_token_signed_response_alg")
            }
            algorithm = known
        }
        let scopes = scope.map { $0.split(separator: " ").map(String.init) } ?? defaultScopes
        let name = clientName.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        return ClientSettings(
            type: type, name: name ?? "Unnamed app", redirectURIs: redirectURIs, scopes: scopes, logoURI: logoURI,
            privacyPolicyURI: policyURI, idTokenSigningAlgorithm: algorithm, postLogoutRedirectURIs: postLogoutRedirectURIs,
            requirePushedAuthorizationRequests: requirePushedAuthorizationRequests,
            allowDeviceCode: grantTypes?.contains(GrantTypes.deviceCode) ?? false, keys: keys,
            allowTokenExchange: grantTypes?.contains(GrantTypes.tokenExchange) ?? false,
            backchannelLogoutURI: backchannelLogoutURI)
    }

    /// Whether a redirect URI goes back to an app on the same device: a loopback IP literal or
    /// `localhost` over http (RFC 8252 §7.3) or a private-use scheme (§7.1).
    static func staysOnDevice(_ uri: String) -> Bool {
        guard RedirectURI.registrationProblem(uri, policy: .native) == nil,
            let scheme = uri.split(separator: ":", maxSplits: 1).first?.lowercased()
        else { return false }
        return scheme == "http" || (scheme != "https" && scheme.contains("."))
    }
}
