import ArgumentParser
import Foundation
import LatchkeyCore
import LatchkeyMail
import LatchkeyServer

struct MailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mail", abstract: "Check the e-mail settings and see the outbox serve sends from.",
        subcommands: [Test.self, Outbox.self])

    /// The SMTP settings a mail command may be given as flags, besides the store's.
    struct SMTPOptions: ParsableArguments {
        @Option(help: "The SMTP relay (see serve --help). Also LATCHKEY_SMTP_URL.")
        var smtpURL: String?
        @Option(help: "The address messages come from. Also LATCHKEY_MAIL_FROM.")
        var mailFrom: String?
        @Option(help: "File holding the SMTP password (or LATCHKEY_SMTP_PASSWORD). Also LATCHKEY_SMTP_PASSWORD_FILE.")
        var smtpPasswordFile: String?
        @Option(help: "PEM file of the certificates to trust for the relay's TLS. Also LATCHKEY_SMTP_CA_FILE.")
        var smtpCaFile: String?

        var flags: [(String, String?)] {
            [
                ("smtp-url", smtpURL), ("mail-from", mailFrom), ("smtp-password-file", smtpPasswordFile),
                ("smtp-ca-file", smtpCaFile),
            ]
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send one test message through the SMTP relay and say what the relay answered if it refused; "
                + "with --queue, put it in the outbox for a running serve to send instead.")

        @Option(help: "Where to send the test message.")
        var to: String
        @Flag(help: "Queue the message in the store's outbox, as the server's own messages are, instead of sending it now.")
        var queue = false
        @OptionGroup var smtp: SMTPOptions
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let settings: Settings
            let mail: MailSettings
            do {
                settings = try await store.allSettings(adding: smtp.flags)
                guard let configured = try MailSettings(settings) else {
                    throw fail("No SMTP relay is set: give --smtp-url (or LATCHKEY_SMTP_URL).")
                }
                mail = configured
            } catch let error as SettingError {
                throw fail(error.description)
            }
            guard let recipient = MailAddress(to) else { throw fail("--to \(to) is not an e-mail address Latchkey can send to.") }
            let relay = "\(mail.client.relay)"
            // The relay's address (and user name) stay out of the message, which may go anywhere.
            let test = OutgoingMail(
                kind: "test", recipient: recipient.rawValue, subject: "Latchkey test message",
                text: "This message shows that Latchkey can send e-mail from \(mail.from).\n",
                html:
                    "<p>This message shows that Latchkey can send e-mail from <code>\(htmlEscaped(mail.from.rawValue))</code>.</p>\n"
            )
            if queue {
                let outbox = MailOutbox(
                    store: try await store.openStore(), keyEncryptionKey: try await store.keyEncryptionKey(),
                    messageIDDomain: String(mail.from.domain))
                let id = try await outbox.enqueue(test)
                print("Queued \(id.rawValue) for \(recipient); serve sends it through \(relay).")
                return
            }
            let message = MailMessage(
                from: mail.from, fromName: mail.fromName, to: recipient, subject: test.subject, text: test.text, html: test.html)
            do {
                try await mail.client.send(message)
            } catch let error as SMTPError {
                FileHandle.standardError.write(Data("latchkey mail test: \(error)\n".utf8))
                throw ExitCode(error.isPermanent ? 2 : 1)
            }
            print("Sent to \(recipient) through \(relay).")
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The outbox: how many messages wait, went out or were given up, and the newest ones.")
        @Option(help: "How many of the newest messages to list.")
        var limit = 20
        @OptionGroup var store: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let opened = try await store.openStore()
            let counts = try await opened.mailOutboxCounts()
            let messages = try await opened.recentMail(limit: max(1, min(limit, 1_000)))
            if output.json {
                try output.printJSON([
                    "queued": counts.queued, "sent": counts.sent, "failed": counts.failed,
                    "messages": messages.map(Self.describe),
                ])
                return
            }
            print("\(counts.queued) queued, \(counts.sent) sent, \(counts.failed) given up.")
            for message in messages {
                let state = message.sentAt != nil ? "sent" : message.failedAt != nil ? "given up" : "queued"
                let error = message.lastError.map { ": \($0)" } ?? ""
                print(
                    "\(message.id.rawValue)  \(message.kind)  \(message.recipient)  \(state), \(message.attempts) attempt(s)\(error)"
                )
            }
        }

        static func describe(_ message: OutboxMessage) -> [String: Any] {
            let fields: [String: Any?] = [
                "id": message.id.rawValue, "kind": message.kind, "recipient": message.recipient,
                "status": message.sentAt != nil ? "sent" : message.failedAt != nil ? "failed" : "queued",
                "attempts": message.attempts, "message_id": message.messageID,
                "created_at": message.createdAt.timeIntervalSince1970,
                "sent_at": message.sentAt?.timeIntervalSince1970, "failed_at": message.failedAt?.timeIntervalSince1970,
                "last_error": message.lastError,
            ]
            return fields.mapValues { $0 ?? NSNull() }
        }
    }
}

/// `text` with the five characters that mean something in HTML written as entities.
private func htmlEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        .replacingOccurrences(of: "'", with: "&#39;")
}
