/// Redirect URI rules (RFC 6749 §3.1.2, RFC 8252 §7–8, RFC 9700 §4.1.3): registration checks and
/// the exact-match comparison used at the authorization endpoint.
public enum RedirectURI {
    /// What a registered redirect URI may be for a kind of client.
    public enum Policy: Sendable {
        /// Native apps: a private-use scheme with a `.` (reverse domain), `https`, a loopback IP
        /// literal, or `http://localhost` (what many MCP clients register; RFC 8252 §8.3 prefers
        /// the IP literal, since a name may resolve elsewhere).
        case native
        /// Web and browser apps: `https`, or `http` on a loopback host.
        case web
    }

    /// The loopback IP-literal prefixes whose port is not compared (RFC 8252 §7.3).
    static let loopbackPrefixes = ["http://127.0.0.1", "http://[::1]"]
    /// `localhost`, whose port is not compared either for a native app's redirect URI
    /// (``matches(requested:registered:localhostAnyPort:)``).
    static let localhostPrefix = "http://localhost"

    /// Whether `uri` is `http://localhost[:port]` followed by a path, a query or nothing (never
    /// `http://localhost.evil.example`).
    public static func isLocalhost(_ uri: String) -> Bool { loopbackRest(of: uri, prefixes: [localhostPrefix]) != nil }

    /// Why a URI cannot be registered, or `nil` when it can.
    public static func registrationProblem(_ uri: String, policy: Policy) -> String? {
        guard let colon = uri.firstIndex(of: ":"), colon != uri.startIndex else {
            return "\(uri) is not an absolute URI"
        }
        let scheme = uri[..<colon].lowercased()
        guard scheme.first!.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return "\(uri) has an invalid scheme" }
        if uri.contains("#") { return "a redirect URI must not contain a fragment (RFC 6749 §3.1.2)" }
        if uri.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F || $0 == "\\" }) {
            return "a redirect URI must be plain ASCII without spaces, controls or backslashes"
        }
        if ["javascript", "data", "file", "vbscript", "about", "blob"].contains(scheme) {
            return "the \(scheme): scheme is never a redirect target"
        }
        if scheme == "http" || scheme == "https", !uri.dropFirst(scheme.count + 1).hasPrefix("//") {
            // `https:evil.example/cb` has no authority: browsers read it as a path.
            return "\(uri) has no host: write \(scheme)://HOST/PATH"
        }
        if scheme == "https" {
            let authority = uri.dropFirst(8).prefix { !"/?".contains($0) }
            if authority.contains("@") { return "\(uri) must not carry a user name or password" }
            return authority.prefix(while: { $0 != ":" }).isEmpty ? "\(uri) has no host" : nil
        }
        if scheme == "http" {
            if loopbackRest(of: uri) != nil || isLocalhost(uri) { return nil }
            return "plain http is allowed only on a loopback address such as http://127.0.0.1/callback (RFC 8252 §7.3)"
        }
        if policy == .web { return "a web or browser client's redirect URI must be https" }
        if !scheme.contains(".") {
            return "a private-use scheme must be a reverse domain name such as com.example.app (RFC 8252 §7.1)"
        }
        return nil
    }

    /// Whether the redirect URI of a request matches a registered one: simple string equality,
    /// except that for a loopback IP literal registration any port is accepted (RFC 8252 §7.3),
    /// and with `localhostAnyPort` (a native app's) for an `http://localhost` registration too.
    public static func matches(requested: String, registered: String, localhostAnyPort: Bool = false) -> Bool {
        if requested == registered { return true }
        let prefixes = localhostAnyPort ? loopbackPrefixes + [localhostPrefix] : loopbackPrefixes
        guard let registeredRest = loopbackRest(of: registered, prefixes: prefixes),
            let requestedRest = loopbackRest(of: requested, prefixes: prefixes),
            registeredRest.prefix == requestedRest.prefix
        else { return false }
        return registeredRest.rest == requestedRest.rest
    }

    /// For `http://127.0.0.1[:port]/rest` or `http://[::1][:port]/rest`: the prefix and what follows
    /// the port. `nil` for anything else, including `127.0.0.1.evil.example` and malformed ports.
    static func loopbackRest(of uri: String, prefixes: [String] = loopbackPrefixes) -> (prefix: String, rest: Substring)? {
        for prefix in prefixes where uri.hasPrefix(prefix) {
            var rest = uri.dropFirst(prefix.count)
            if rest.first == ":" {
                let digits = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
                guard (1...5).contains(digits.count), let port = Int(digits), (1...65535).contains(port) else {
                    return nil
                }
                rest = rest.dropFirst(1 + digits.count)
            }
            guard rest.isEmpty || rest.first == "/" || rest.first == "?" else { return nil }
            return (prefix, rest)
        }
        return nil
    }

    /// `uri` with `parameters` appended to its query (RFC 6749 §4.1.2: "retaining" any existing query),
    /// or to its fragment when `inFragment` is set (implicit responses).
    public static func appending(_ parameters: [(String, String)], to uri: String, inFragment: Bool = false) -> String {
        // Nothing to add leaves the URI as registered: no bare `?` or `#` (RP-initiated logout
        // without `state`).
        if parameters.isEmpty { return uri }
        let encoded = FormParameters(parameters).encoded
        if inFragment { return uri + "#" + encoded }
        return uri + (uri.contains("?") ? "&" : "?") + encoded
    }
}
