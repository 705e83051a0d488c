/// The `grant_types` values (RFC 7591 §2) of Latchkey's own grants: those of the token endpoint
/// (``GrantRegistry``), and `implicit`, a response type of the authorization endpoint.
public enum GrantTypes {
    public static let authorizationCode = "authorization_code"
    /// `response_type=token` (RFC 6749 §4.2), for browser clients an administrator opted in.
    public static let implicit = "implicit"
    public static let refreshToken = "refresh_token"
    public static let clientCredentials = "client_credentials"
    /// RFC 8628 §3.4.
    public static let deviceCode = "urn:ietf:params:oauth:grant-type:device_code"
    /// RFC 8693 §2.1.
    public static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// RFC 7523 §2.1: an assertion from a trusted identity provider, identity assertion grants
    /// (`oauth-id-jag+jwt`) among them.
    public static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The order lists are kept and shown in; a grant added later comes after these.
    static let order = [authorizationCode, implicit, refreshToken, clientCredentials, deviceCode, tokenExchange, jwtBearer]

    /// `values` without repeats, in ``order`` (others last, as given).
    public static func ordered(_ values: [String]) -> [String] {
        var seen = Set<String>()
        let unique = values.filter { seen.insert($0).inserted }
        return order.filter(unique.contains) + unique.filter { !order.contains($0) }
    }
}

extension GrantTypes {
    /// `values` with `grantType` added (`true`) or taken out, in ``order``.
    static func setting(_ grantType: String, _ present: Bool, in values: [String]) -> [String] {
        ordered(present ? values + [grantType] : values.filter { $0 != grantType })
    }
}

extension GrantRegistry {
    /// What a client of `type` has unless it is told otherwise: every grant that permits its kind
    /// and is granted by default (the code flow and refresh for apps, client credentials for a service).
    public func defaultGrantTypes(for type: ClientType) -> [String] {
        grants.filter { $0.isGrantedByDefault && $0.permits(type) }.map(\.grantType)
    }

    /// What a client of `type` may be given beyond its defaults: the grants that permit its kind
    /// but only on request (the device grant), and `implicit` for a browser client.
    public func optionalGrantTypes(for type: ClientType) -> [String] {
        (type == .browser ? [GrantTypes.implicit] : [])
            + grants.filter { !$0.isGrantedByDefault && $0.permits(type) }.map(\.grantType)
    }

    /// Why `values` cannot be the list of a `type` client, or `nil` when it can: it holds the
    /// kind's defaults and nothing beyond ``optionalGrantTypes(for:)``.
    public func problem(_ values: [String], for type: ClientType) -> String? {
        let defaults = defaultGrantTypes(for: type)
        if let missing = defaults.first(where: { !values.contains($0) }) {
            return "A \(type.rawValue) client always has the \(missing) grant."
        }
        let allowed = defaults + optionalGrantTypes(for: type)
        if let other = values.first(where: { !allowed.contains($0) }) {
            return "A \(type.rawValue) client cannot be given the \(other) grant; it may have "
                + allowed.joined(separator: ", ") + "."
        }
        return nil
    }
}

/// A client's grant list and the two grants that are flags on the CLI, the console form and the
/// admin API: ``Client`` and ``ClientSettings``.
public protocol GrantTypeList {
    /// `grant_types` (RFC 7591 §2).
    var grantTypes: [String] { get set }
}

extension GrantTypeList {
    /// `allow_implicit`: whether a browser client may ask for `response_type=token`.
    public var allowImplicit: Bool {
        get { grantTypes.contains(GrantTypes.implicit) }
        set { grantTypes = GrantTypes.setting(GrantTypes.implicit, newValue, in: grantTypes) }
    }

    /// `allow_device_code`: whether the client may use the device authorization grant (RFC 8628):
    /// off unless an administrator or its registration turns it on; native and web apps only.
    public var allowDeviceCode: Bool {
        get { grantTypes.contains(GrantTypes.deviceCode) }
        set { grantTypes = GrantTypes.setting(GrantTypes.deviceCode, newValue, in: grantTypes) }
    }

    /// `allow_token_exchange`: whether the client may exchange tokens (RFC 8693): off unless an
    /// administrator or its registration turns it on; web and service clients only.
    public var allowTokenExchange: Bool {
        get { grantTypes.contains(GrantTypes.tokenExchange) }
        set { grantTypes = GrantTypes.setting(GrantTypes.tokenExchange, newValue, in: grantTypes) }
    }
}

extension Client: GrantTypeList {}
extension ClientSettings: GrantTypeList {}
