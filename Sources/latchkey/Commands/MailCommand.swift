import ArgumentParser
import Foundation
import LatchkeyMail

struct MailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mail", abstract: "Check the e-mail settings (the SMTP relay serve uses).", subcommands: [Test.self])

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send one test message through the SMTP relay, and say what the relay answered if it refused.")

        @Option(help: "Where to send the test message.")
        var to: String
        @Option(help: "The SMTP relay (see serve --help). Also LATCHKEY_SMTP_URL.")
        var smtpURL: String?
        @Option(help: "The address the message comes from. Also LATCHKEY_MAIL_FROM.")
        var mailFrom: String?
        @Option(help: "File holding the SMTP password (or LATCHKEY_SMTP_PASSWORD). Also LATCHKEY_SMTP_PASSWORD_FILE.")
        var smtpPasswordFile: String?
        @Option(help: "PEM file of the certificates to trust for the relay's TLS. Also LATCHKEY_SMTP_CA_FILE.")
        var smtpCaFile: String?
        @Option(help: "The configuration file serve reads (JSON). Also LATCHKEY_CONFIG.")
        var config: String?

        func run() async throws {
            var arguments: [String] = []
            for (name, value) in [
                ("smtp-url", smtpURL), ("mail-from", mailFrom), ("smtp-password-file", smtpPasswordFile),
                ("smtp-ca-file", smtpCaFile), ("config", config),
            ] {
                if let value { arguments.append("--\(name)=\(value)") }
            }
            let mail: MailSettings
            do {
                guard let settings = try MailSettings(try await Settings(arguments: arguments)) else {
                    throw fail("No SMTP relay is set: give --smtp-url (or LATCHKEY_SMTP_URL).")
                }
                mail = settings
            } catch let error as SettingError {
                throw fail(error.description)
            }
            guard let recipient = MailAddress(to) else { throw fail("--to \(to) is not an e-mail address Latchkey can send to.") }
            let message = MailMessage(
                from: mail.from, fromName: "Latchkey", to: recipient, subject: "Latchkey test message",
                text: "This message shows that Latchkey can send e-mail through \(mail.client.relay).\n",
                html:
                    "<p>This message shows that Latchkey can send e-mail through <code>\(htmlEscaped("\(mail.client.relay)"))</code>.</p>\n"
            )
            do {
                try await mail.client.send(message)
            } catch let error as SMTPError {
                FileHandle.standardError.write(Data("latchkey mail test: \(error)\n".utf8))
                throw ExitCode(error.isPermanent ? 2 : 1)
            }
            print("Sent to \(recipient) through \(mail.client.relay).")
        }
    }
}

/// `text` with the five characters that mean something in HTML written as entities.
private func htmlEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        .replacingOccurrences(of: "'", with: "&#39;")
}
