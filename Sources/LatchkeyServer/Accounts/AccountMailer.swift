import Foundation
import LatchkeyCore
import Mustache

/// One e-mail about an account, before it is rendered: what it says, in plain sentences, and at
/// most one link. Both parts of the message (plain text and HTML) come from the same content, so
/// they never say different things.
public struct AccountMail: Sendable, Equatable {
    /// The outbox's `kind` (``OutgoingMail/kind``): what the message is for.
    public var kind: String
    public var recipient: String
    public var subject: String
    public var greeting: String
    public var paragraphs: [String]
    /// The link the message is for, as a button and as text; always under the issuer.
    public var action: (label: String, url: String)?
    /// What to do when the message was not expected.
    public var footnote: String?

    public static func == (lhs: AccountMail, rhs: AccountMail) -> Bool {
        lhs.kind == rhs.kind && lhs.recipient == rhs.recipient && lhs.subject == rhs.subject
            && lhs.paragraphs == rhs.paragraphs && lhs.action?.url == rhs.action?.url
    }
}

/// Renders ``AccountMail`` into the outbox's messages: the plain-text and HTML templates in
/// `Resources/mail/`, compiled into the binary.
public struct AccountMailer: Sendable {
    let outbox: MailOutbox
    /// The name that signs the messages: the issuer's host.
    let siteName: String
    private let text: MustacheTemplate
    private let html: MustacheTemplate

    public init(outbox: MailOutbox, issuer: String) {
        self.outbox = outbox
        siteName = URL(string: issuer)?.host ?? issuer
        // The templates are constants of this module: a parse failure is a programming error.
        text = try! MustacheTemplate(string: String(decoding: PackageResources.mail_text_mustache, as: UTF8.self))
        html = try! MustacheTemplate(string: String(decoding: PackageResources.mail_html_mustache, as: UTF8.self))
    }

    /// The message as the outbox stores it.
    public func rendered(_ mail: AccountMail) -> OutgoingMail {
        var context: [String: Any] = [
            "subject": mail.subject, "greeting": mail.greeting, "paragraphs": mail.paragraphs, "siteName": siteName,
        ]
        if let action = mail.action { context["action"] = ["label": action.label, "url": action.url] }
        if let footnote = mail.footnote { context["footnote"] = footnote }
        return OutgoingMail(
            kind: mail.kind, recipient: mail.recipient, subject: mail.subject, text: text.render(context),
            html: html.render(context))
    }

    /// Queues `mail` in the outbox, which sends it (with retries) from the sender service.
    public func send(_ mail: AccountMail) async throws {
        try await outbox.enqueue(rendered(mail))
    }
}
