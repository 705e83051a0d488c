import Foundation
import LatchkeyCore
import Testing

@testable import LatchkeyMail

@Suite("E-mail: addresses, the relay's URL and the rendered message")
struct MailTests {
    @Test("Addresses: dot-atoms and plain domains only, so none can end a command line or a header")
    func addresses() {
        for valid in ["alice@example.com", "a.b+tag@mail.example.org", "o'brien@example.ie", "jörg@bücher.example"] {
            #expect(MailAddress(valid) != nil, "\(valid)")
        }
        for invalid in [
            "", "alice", "@example.com", "alice@", "alice@@example.com", ".alice@example.com", "al..ice@example.com",
            "alice@example..com", "alice@-example.com", "alice@example-.com", "\"alice\"@example.com", "alice@[127.0.0.1]",
            "alice @example.com", "alice@example.com\r\nRCPT TO:<eve@example.com>", "alice@example.com>", "<alice@example.com",
            "alice\0@example.com", String(repeating: "a", count: 65) + "@example.com",
        ] {
            #expect(MailAddress(invalid) == nil, "\(invalid.debugDescription)")
        }
        #expect(MailAddress("jörg@example.com")?.needsSMTPUTF8 == true)
        #expect(MailAddress("jorg@example.com")?.needsSMTPUTF8 == false)
        #expect(MailAddress("a@b@example.com") == nil)
    }

    @Test("--smtp-url: schemes, default ports, STARTTLS off only for smtp://, no password in the description")
    func relayURL() throws {
        let submission = try SMTPRelay(url: "smtp://mailer:p%40ss@mail.example.com")
        #expect(submission.security == .startTLS && submission.port == 587)
        #expect(submission.username == "mailer" && submission.password == "p@ss")
        #expect(!"\(submission)".contains("p@ss") && !"\(submission)".contains("p%40ss"))
        let implicit = try SMTPRelay(url: "smtps://mail.example.com")
        #expect(implicit.security == .implicitTLS && implicit.port == 465 && implicit.username == nil)
        let local = try SMTPRelay(url: "smtp://127.0.0.1:2525?starttls=off")
        #expect(local.security == .none && local.port == 2525 && local.isLoopback)
        #expect(try SMTPRelay(url: "smtp://[::1]:25").host == "::1")
        #expect(try SMTPRelay(url: "smtp://[::1]:25").isLoopback)
        #expect(try !SMTPRelay(url: "smtp://10.0.0.1:25").isLoopback)
        #expect(try !SMTPRelay(url: "smtp://mail.example.com").isLoopback)
        for refused in [
            "http://mail.example.com", "smtps://mail.example.com?starttls=off", "smtp://mail.example.com?tls=off",
            "smtp://mail.example.com/path", "smtp://", "smtp://mail.example.com:0", "not a url",
        ] {
            #expect(throws: SMTPError.self, "\(refused)") { try SMTPRelay(url: refused) }
        }
    }

    @Test("Headers outside printable ASCII become encoded words: a CR LF in a subject adds no header")
    func encodedHeaders() throws {
        let message = MailMessage(
            from: try #require(MailAddress("latchkey@example.com")), fromName: "Latchkey \"Accounts\"",
            to: try #require(MailAddress("alice@example.com")), subject: "Hello\r\nBcc: eve@example.com",
            text: "Hi", messageID: "<1@example.com>", date: Date(timeIntervalSince1970: 1_795_000_000))
        let rendered = message.rendered()
        let headers = rendered.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
        #expect(!headers.contains { $0.hasPrefix("Bcc:") })
        #expect(headers.contains("Subject: =?utf-8?B?\(Data("Hello\r\nBcc: eve@example.com".utf8).base64EncodedString())?="))
        #expect(headers.contains { $0.hasPrefix("From: =?utf-8?B?") && $0.hasSuffix("<latchkey@example.com>") })
        #expect(headers.contains("Date: Wed, 18 Nov 2026 11:06:40 +0000"))
        #expect(!rendered.contains("\n\n") && !rendered.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }

    @Test("A long subject beyond ASCII is split into words of at most 75 characters, between characters")
    func longSubject() throws {
        let subject = String(repeating: "Überprüfung Ihrer Adresse ", count: 8)
        let message = MailMessage(
            from: try #require(MailAddress("a@example.com")), to: try #require(MailAddress("b@example.com")),
            subject: subject, text: "x")
        let rendered = message.rendered()
        #expect(rendered.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 78 })
        let words = rendered.components(separatedBy: "\r\n").filter { $0.contains("=?utf-8?B?") }
            .flatMap { $0.split(separator: " ") }.filter { $0.hasPrefix("=?utf-8?B?") }
        #expect(words.count > 1 && words.allSatisfy { $0.count <= 75 })
        let decoded = words.map { word -> String in
            let base64 = word.dropFirst("=?utf-8?B?".count).dropLast(2)
            return String(decoding: Data(base64Encoded: String(base64))!, as: UTF8.self)
        }.joined()
        #expect(decoded == subject)
    }

    @Test("Plain ASCII text that looks like an encoded word is encoded, not passed as one")
    func lookalike() throws {
        let message = MailMessage(
            from: try #require(MailAddress("a@example.com")), to: try #require(MailAddress("b@example.com")),
            subject: "=?utf-8?B?SGk=?=", text: "x")
        #expect(!message.rendered().contains("Subject: =?utf-8?B?SGk=?=\r\n"))
    }

    @Test("A Message-ID that could end a header is replaced; a character of many marks spans encoded words")
    func messageIDAndMarks() throws {
        let from = try #require(MailAddress("a@example.com"))
        let to = try #require(MailAddress("b@example.com"))
        for bad in ["<x@y>\r\nBcc: eve@example.com", "<x y@example.com>", "x@example.com", "<x@y@z>", "<@example.com>"] {
            let message = MailMessage(from: from, to: to, subject: "s", text: "t", messageID: bad)
            #expect(message.messageID != bad && MailMessage.isMessageID(message.messageID), "\(bad.debugDescription)")
        }
        #expect(
            MailMessage(from: from, to: to, subject: "s", text: "t", messageID: "<0190a1b2-c3@example.com>").messageID
                == "<0190a1b2-c3@example.com>")
        let marks = "e" + String(repeating: "\u{301}", count: 80)
        let rendered = MailMessage(from: from, to: to, subject: marks, text: "t").rendered()
        #expect(rendered.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 78 })
    }

    @Test("DATA: a line that starts with a dot gets a second one (RFC 5321 §4.5.2)")
    func dotStuffing() {
        #expect(SMTPClient.dotStuffed("a\r\n.b\r\n..c\r\n.\r\n") == "a\r\n..b\r\n...c\r\n..\r\n")
    }

    @Test("The body is base64 in lines of 76, CRLF line ends in the text first")
    func body() throws {
        let text = "line one\nline two\r\nline three\r" + String(repeating: "x", count: 200)
        let message = MailMessage(
            from: try #require(MailAddress("a@example.com")), to: try #require(MailAddress("b@example.com")),
            subject: "s", text: text)
        let parts = message.rendered().components(separatedBy: "\r\n\r\n")
        let bodyLines = parts[1].components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(bodyLines.allSatisfy { $0.count <= 76 })
        let decoded = String(decoding: Data(base64Encoded: bodyLines.joined())!, as: UTF8.self)
        #expect(decoded == "line one\r\nline two\r\nline three\r\n" + String(repeating: "x", count: 200))
    }

    @Test("A refusal in the 5xx range is permanent; 4xx, connections and protocol faults are not")
    func permanence() {
        #expect(SMTPError.refused(command: "RCPT", reply: SMTPReply(code: 550, lines: ["no"])).isPermanent)
        #expect(!SMTPError.refused(command: "RCPT", reply: SMTPReply(code: 451, lines: ["later"])).isPermanent)
        #expect(!SMTPError.connection("x").isPermanent && !SMTPError.protocolViolation("x").isPermanent)
        #expect(SMTPError.configuration("x").isPermanent)
    }
}
