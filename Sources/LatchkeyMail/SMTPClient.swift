import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Hands messages to an SMTP relay (RFC 5321), one connection per message: greeting, `EHLO`,
/// `STARTTLS` and `EHLO` again where required (RFC 3207), `AUTH` where credentials are given
/// (RFC 4954, `PLAIN` or else `LOGIN`), then `MAIL FROM`, `RCPT TO`, `DATA` and `QUIT`.
///
/// TLS checks the relay's certificate chain and name; ``trustedCertificatesFile`` adds a private
/// certification authority. A message counts as sent only when the relay answered the end of
/// `DATA` with 250.
public struct SMTPClient: Sendable {
    public var relay: SMTPRelay
    /// The name this machine gives in `EHLO`: a fully qualified domain name, or `nil` for the
    /// address literal of the connection's own address (`[192.0.2.1]`, RFC 5321 §4.1.4), which
    /// relays that refuse a bare host name accept.
    public var clientName: String?
    /// A PEM file of certificates to trust instead of the system's, for a relay with a private CA.
    public var trustedCertificatesFile: String?
    /// How long to wait for each reply and for the connection (RFC 5321 §4.5.3.2 allows minutes).
    public var timeout: Duration
    /// How long a whole session may take, however the relay paces its replies: a sender that
    /// holds a message (``MailOutbox``) must be done well within its claim.
    public var sessionTimeout: Duration

    public init(
        relay: SMTPRelay, clientName: String?, trustedCertificatesFile: String? = nil, timeout: Duration = .seconds(60),
        sessionTimeout: Duration = .seconds(180)
    ) {
        self.relay = relay
        self.clientName = clientName
        self.trustedCertificatesFile = trustedCertificatesFile
        self.timeout = timeout
        self.sessionTimeout = sessionTimeout
    }

    /// Sends `message`; throws ``SMTPError`` when the relay did not take it. Cancelling the task
    /// ends the session at once.
    public func send(_ message: MailMessage) async throws {
        let tls = relay.security == .none ? nil : try tlsContext()
        let session = try await SMTPSession.open(
            relay: relay, implicitTLS: relay.security == .implicitTLS ? tls : nil, timeout: timeout,
            sessionTimeout: sessionTimeout)
        try await withTaskCancellationHandler {
            try await converse(session, message, tls: tls)
        } onCancel: {
            session.close(because: .connection("The session with the SMTP relay was cancelled."))
        }
    }

    private func converse(_ session: SMTPSession, _ message: MailMessage, tls: NIOSSLContext?) async throws {
        let name = clientName ?? session.localAddressLiteral
        do {
            try await session.expect(220, "the greeting")
            var extensions = try await session.hello(name)
            if relay.security == .startTLS {
                guard extensions["STARTTLS"] != nil else {
                    // Not final: someone on the path may have taken the offer out of the reply.
                    throw SMTPError.connection(
                        "The SMTP relay \(relay) does not offer STARTTLS (or its offer was removed on the way); use "
                            + "smtps://, or add ?starttls=off for a relay on a trusted network.")
                }
                try await session.command("STARTTLS", expect: 220)
                try await session.startTLS(tls!, serverName: relay.hostIsAddress ? nil : relay.host)
                extensions = try await session.hello(name)
            }
            if let username = relay.username {
                try await authenticate(session, username: username, offered: extensions["AUTH"])
            }
            let international = message.from.needsSMTPUTF8 || message.to.needsSMTPUTF8
            if international && extensions["SMTPUTF8"] == nil {
                throw SMTPError.configuration("The SMTP relay does not take addresses beyond ASCII (it does not offer SMTPUTF8).")
            }
            try await session.command("MAIL FROM:<\(message.from)>" + (international ? " SMTPUTF8" : ""), expect: 250)
            try await session.command("RCPT TO:<\(message.to)>", expect: 250, 251)
            try await session.command("DATA", expect: 354)
            try await session.command(Self.dotStuffed(message.rendered()) + ".", expect: 250, name: "the message")
            await session.quit()
        } catch {
            session.close(because: nil)
            throw error
        }
    }

    private func authenticate(_ session: SMTPSession, username: String, offered: [String]?) async throws {
        guard relay.security != .none || relay.isLoopback else {
            throw SMTPError.configuration(
                "The SMTP URL has credentials but no TLS: they would cross the network in plain text. Use smtps:// or STARTTLS.")
        }
        guard let password = relay.password else {
            throw SMTPError.configuration("The SMTP URL names a user but no password was given.")
        }
        let mechanisms = Set((offered ?? []).map { $0.uppercased() })
        if mechanisms.contains("PLAIN") {
            let credentials = Data(([0] + Array(username.utf8) + [0] + Array(password.utf8))).base64EncodedString()
            try await session.command("AUTH PLAIN \(credentials)", expect: 235, name: "AUTH PLAIN")
        } else if mechanisms.contains("LOGIN") {
            try await session.command("AUTH LOGIN", expect: 334)
            try await session.command(Data(username.utf8).base64EncodedString(), expect: 334, name: "the user name")
            try await session.command(Data(password.utf8).base64EncodedString(), expect: 235, name: "the password")
        } else {
            throw SMTPError.configuration(
                "The SMTP relay offers no sign-in Latchkey knows (PLAIN or LOGIN); it offers: "
                    + (offered?.joined(separator: " ") ?? "none") + ".")
        }
    }

    private func tlsContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        if let trustedCertificatesFile { configuration.trustRoots = .file(trustedCertificatesFile) }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw SMTPError.configuration("The TLS settings for the SMTP relay cannot be used: \(error)")
        }
    }

    /// The message with a dot doubled at the start of every line (RFC 5321 §4.5.2), CRLF-ended.
    static func dotStuffed(_ rendered: String) -> String {
        rendered.split(separator: "\r\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.hasPrefix(".") ? "." + $0 : String($0) }.joined(separator: "\r\n") + "\r\n"
    }
}
