/// Why a message was not handed over. ``isPermanent`` tells a sender whether trying again later
/// can help: a refusal in the 5xx range or a setting that cannot work will fail the same way.
public enum SMTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The relay's settings cannot work (a relay without `STARTTLS` when it is required,
    /// credentials over plain text, no `AUTH` mechanism in common).
    case configuration(String)
    /// No connection, a TLS failure, a connection closed early or a relay that did not answer in time.
    case connection(String)
    /// The relay answered a command with a refusal (RFC 5321 §4.2.1).
    case refused(command: String, reply: SMTPReply)
    /// The relay broke the protocol: a malformed or oversized answer, or bytes where none may be.
    case protocolViolation(String)

    public var isPermanent: Bool {
        switch self {
        case .configuration: true
        case .refused(_, let reply): reply.code >= 500
        case .connection, .protocolViolation: false
        }
    }

    public var description: String {
        switch self {
        case .configuration(let message), .connection(let message), .protocolViolation(let message): message
        case .refused(let command, let reply): "The SMTP relay refused \(command): \(reply)"
        }
    }
}

/// One reply of the relay: a three-digit code and its text lines (RFC 5321 §4.2).
public struct SMTPReply: Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var lines: [String]

    public var description: String { "\(code) " + lines.joined(separator: " / ") }

    /// The `EHLO` reply's extension keywords (upper-cased) and their parameters (RFC 5321 §4.1.1.1):
    /// every line but the first.
    var extensions: [String: [String]] {
        var found: [String: [String]] = [:]
        for line in lines.dropFirst() {
            let words = line.split(separator: " ").map(String.init)
            guard let keyword = words.first else { continue }
            found[keyword.uppercased()] = Array(words.dropFirst())
        }
        return found
    }
}
