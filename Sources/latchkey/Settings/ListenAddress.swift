/// A host and port to listen on: `HOST:PORT`, `[IPv6]:PORT`, or `PORT` with a default host.
struct ListenAddress: Equatable, Sendable {
    var host: String
    var port: Int

    init?(_ text: String, defaultHost: String) {
        let hostPart: Substring
        let portPart: Substring
        if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        } else {
            hostPart = ""
            portPart = Substring(text)
        }
        guard let port = Int(portPart), (0...65_535).contains(port) else { return nil }
        var host = String(hostPart)
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil  // an IPv6 address needs brackets
        }
        guard !host.contains(where: { $0 == "/" || $0 == " " || $0 == "[" || $0 == "]" }) else { return nil }
        self.host = host.isEmpty ? defaultHost : host
        self.port = port
    }

    /// The host as written in a URL (IPv6 in brackets).
    var hostInURL: String { host.contains(":") ? "[\(host)]" : host }
}
