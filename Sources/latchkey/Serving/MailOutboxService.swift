import Foundation
import LatchkeyCore
import LatchkeyMail
import LatchkeyServer
import Logging
import Metrics
import ServiceLifecycle

/// Sends the outbox through the SMTP relay: every few seconds, or at once after a message was
/// sent (there may be more), it claims what is due and hands each message to the relay. Any
/// instance may run it; the store's claims keep two from sending one message.
struct MailOutboxService: Service {
    let outbox: MailOutbox
    let mail: MailSettings
    let logger: Logger
    var pollInterval: Duration = .seconds(2)

    private static let sent = Counter(label: "latchkey_mail_sent_total")
    private static let retried = Counter(label: "latchkey_mail_retries_total")
    private static let failed = Counter(label: "latchkey_mail_failed_total")
    private static let queued = Gauge(label: "latchkey_mail_queued")

    /// How often the queued gauge is counted again when nothing was sent: the count reads the whole
    /// outbox, finished rows included, so it is not taken on every poll.
    var countInterval: Duration = .seconds(30)

    func run() async throws {
        let clock = ContinuousClock()
        var counted: ContinuousClock.Instant? = nil
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            var handled = 0
            do {
                // One message at a time; a shutdown ends the session under way (the message stays
                // claimed and goes again when the claim ends).
                let results = try await cancelWhenGracefulShutdown {
                    try await outbox.deliverDue(limit: 1) { due in await send(due) }
                }
                handled = results.count
                for (message, outcome) in results { account(message, outcome) }
                if handled > 0 || counted.map({ clock.now - $0 >= countInterval }) ?? true {
                    Self.queued.record(try await outbox.store.mailOutboxCounts().queued)
                    counted = clock.now
                }
            } catch {
                logger.warning("the mail outbox could not be read; will retry", metadata: ["error": "\(error)"])
            }
            if handled == 0 {
                do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: pollInterval) } } catch { return }
            }
        }
    }

    private func send(_ due: DueMail) async -> MailDeliveryOutcome {
        guard let recipient = MailAddress(due.mail.recipient) else {
            return .refused("The recipient \(due.mail.recipient) is not an address Latchkey can send to.")
        }
        let message = MailMessage(
            from: mail.from, fromName: mail.fromName, to: recipient, subject: due.mail.subject, text: due.mail.text,
            html: due.mail.html, messageID: due.messageID, date: Date())
        do {
            try await mail.client.send(message)
            return .sent
        } catch let error as SMTPError {
            return error.isPermanent ? .refused(error.description) : .tryAgain(error.description)
        } catch {
            return .tryAgain("\(error)")
        }
    }

    private func account(_ message: OutboxMessage, _ outcome: MailDeliveryOutcome) {
        let metadata: Logger.Metadata = [
            "mail_id": "\(message.id.rawValue)", "kind": "\(message.kind)", "attempt": "\(message.attempts)",
        ]
        switch outcome {
        case .sent:
            Self.sent.increment()
            logger.info("mail sent", metadata: metadata)
        case .tryAgain(let error):
            Self.retried.increment()
            logger.warning("mail not sent; will retry", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        case .refused(let error):
            Self.failed.increment()
            logger.error("mail refused; given up", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }
}
