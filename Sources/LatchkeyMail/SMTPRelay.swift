import Foundation

/// Where and how Latchkey hands its e-mail over: the relay of `--smtp-url`.
///
/// - `smtps://host[:465]`: TLS from the first byte (implicit TLS, RFC 8314 §3.3).
/// - `smtp://host[:587]`: the connection must turn to TLS with `STARTTLS` (RFC 3207) before
///   anything else is sent; a relay that does not offer it is refused.
/// - `smtp://host:port?starttls=off`: plain text, for a relay on the same machine or network.
///
/// `user:password@` before the host signs in with `AUTH` (RFC 4954). Credentials never cross
/// a connection without TLS unless the relay is on a loopback address.
public struct SMTPRelay: Sendable, Equatable {
    public enum Security: String, Sendable {
        /// `smtps://`.
        case implicitTLS = "smtps"
        /// `smtp://`: `STARTTLS` required.
        case startTLS = "starttls"
        /// `smtp://…?starttls=off`.
        case none
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    /// Never printed: ``description`` leaves it out.
    public var password: String?

    public init(host: String, port: Int, security: Security, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
    }

    /// Reads `--smtp-url`. Throws ``SMTPError/configuration(_:)`` with what is wrong.
    public init(url text: String) throws {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased() else {
            throw SMTPError.configuration("The SMTP URL is not a URL: write smtp://host:port or smtps://host:port.")
        }
        guard scheme == "smtp" || scheme == "smtps" else {
            throw SMTPError.configuration("The SMTP URL must start with smtp:// or smtps://, not \(scheme)://.")
        }
        guard var host = url.host, !host.isEmpty else { throw SMTPError.configuration("The SMTP URL names no host.") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard url.path.isEmpty || url.path == "/", url.fragment == nil else {
            throw SMTPError.configuration(
                "The SMTP URL has a path or a fragment; it takes only smtp[s]://[user:password@]host:port.")
        }
        var security: Security = scheme == "smtps" ? .implicitTLS : .startTLS
        for item in url.queryItems ?? [] {
            switch (item.name, item.value?.lowercased()) {
            case ("starttls", "off") where scheme == "smtp": security = .none
            case ("starttls", "on") where scheme == "smtp": security = .startTLS
            default:
                throw SMTPError.configuration(
                    "The SMTP URL's query may only be starttls=off (or on), and only with smtp://; it has \(item.name).")
            }
        }
        if let port = url.port, !(1...65_535).contains(port) {
            throw SMTPError.configuration("The SMTP URL's port must be between 1 and 65535.")
        }
        self.init(
            host: host, port: url.port ?? (security == .implicitTLS ? 465 : 587), security: security,
            username: url.user.flatMap { $0.isEmpty ? nil : $0 }, password: url.password)
    }

    /// Whether the relay is on this machine (`localhost` or a loopback address).
    public var isLoopback: Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: v6) { $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1 }
        }
        return false
    }

    /// Whether `host` is an IP address, which TLS does not send as a server name (RFC 6066 §3).
    var hostIsAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

extension SMTPRelay: CustomStringConvertible {
    /// The relay for logs and `--print-config`: the user's name but never the password.
    public var description: String {
        let scheme = security == .implicitTLS ? "smtps" : "smtp"
        let user = username.map { "\($0)@" } ?? ""
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(user)\(name):\(port)" + (security == .none ? "?starttls=off" : "")
    }
}
