import Foundation
import LatchkeyCore
import LatchkeyMail

/// The e-mail settings: the relay of `smtp-url` with its password put in from `smtp-password`
/// (`LATCHKEY_SMTP_PASSWORD`) or the first line of `smtp-password-file`, so that the password
/// need not be a flag that any user of the machine can read in the process list, and the sender.
struct MailSettings: Sendable {
    var client: SMTPClient
    var from: MailAddress
    /// The sender's display name.
    var fromName = "Latchkey"

    /// `nil` when no `smtp-url` is set: the server sends no e-mail.
    init?(_ settings: Settings) throws {
        guard let url = try settings.text("smtp-url") else { return nil }
        var relay: SMTPRelay
        do { relay = try SMTPRelay(url: url) } catch let error as SMTPError {
            throw SettingError(description: "smtp-url: \(error)")
        }
        var password = try settings.text("smtp-password")
        if password == nil, let file = try settings.text("smtp-password-file") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw SettingError(description: "smtp-password-file \(file) cannot be read.")
            }
            password = String(text.prefix { $0 != "\n" && $0 != "\r" })
        }
        if let password {
            guard relay.password == nil else {
                throw SettingError(
                    description: "smtp-url holds a password already: give it there or in smtp-password(-file), not both.")
            }
            guard relay.username != nil else {
                throw SettingError(description: "An SMTP password is given but smtp-url names no user (smtp://USER@host).")
            }
            relay.password = password
        }
        guard let fromText = try settings.text("mail-from") else {
            throw SettingError(description: "smtp-url is set but mail-from is not: give the address e-mail comes from.")
        }
        guard let from = MailAddress(fromText) else {
            throw SettingError(description: "mail-from \(fromText) is not an e-mail address (local@domain).")
        }
        // Settings that could never work stop start-up, rather than give up every message later.
        if relay.username != nil, relay.password == nil {
            throw SettingError(
                description: "smtp-url names a user but no password was given (smtp-password or smtp-password-file).")
        }
        if relay.username != nil, relay.security == .none, !relay.isLoopback {
            throw SettingError(
                description:
                    "smtp-url has credentials but starttls=off: they would cross the network in plain text. Use smtps:// or STARTTLS."
            )
        }
        self.from = from
        client = SMTPClient(relay: relay, clientName: Self.hostName, trustedCertificatesFile: try settings.text("smtp-ca-file"))
    }

    /// This machine's fully qualified name for `EHLO`, or `nil` (the connection's address literal)
    /// when it has none: relays may refuse a bare host name (RFC 5321 §4.1.4).
    private static var hostName: String? {
        let name = ProcessInfo.processInfo.hostName
        return name.contains(".") && !name.contains(" ") && !name.hasSuffix(".") ? name : nil
    }
}
