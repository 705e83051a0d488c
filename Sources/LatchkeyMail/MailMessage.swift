import Foundation
import LatchkeyCore

/// One e-mail: a plain-text part and, when given, an HTML part of the same content, rendered as
/// an Internet message (RFC 5322) with MIME parts (RFC 2045, RFC 2046 §5.1.4 `multipart/alternative`).
///
/// Whatever the text holds, the rendering cannot add a header or end the message early: headers
/// outside printable ASCII are written as encoded words (RFC 2047), both parts are base64, and the
/// `Message-ID` is checked, so no line starts with a dot or ends early. Headers are folded at 78
/// characters where they have spaces; a printable-ASCII subject of one long word may make a
/// line of up to 910 (RFC 5322 §2.1.1 allows 998).
public struct MailMessage: Sendable, Equatable {
    public var from: MailAddress
    /// The sender's display name (`From: "Latchkey" <…>`).
    public var fromName: String?
    public var to: MailAddress
    public var subject: String
    public var text: String
    public var html: String?
    /// `Message-ID` (RFC 5322 §3.6.4), made once with the message, so that a message sent again
    /// after a lost answer can be recognised as the same one.
    public var messageID: String
    public var date: Date

    public init(
        from: MailAddress, fromName: String? = nil, to: MailAddress, subject: String, text: String, html: String? = nil,
        messageID: String? = nil, date: Date = Date()
    ) {
        self.from = from
        self.fromName = fromName
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        // Only `<id-left@id-right>` of printable ASCII without spaces, brackets or a second `@`
        // (RFC 5322 §3.6.4) reaches the header; anything else is replaced.
        self.messageID = messageID.flatMap { Self.isMessageID($0) ? $0 : nil } ?? Self.newMessageID(domain: from.domain)
        self.date = date
    }

    /// A new `<random@domain>`.
    public static func newMessageID(domain: some StringProtocol) -> String {
        "<\(randomHex(byteCount: 16))@\(domain)>"
    }

    /// Whether `text` is `<left@right>`, both sides printable ASCII without spaces, angle brackets or `@`.
    static func isMessageID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count <= 250, bytes.first == UInt8(ascii: "<"), bytes.last == UInt8(ascii: ">") else { return false }
        let inner = bytes.dropFirst().dropLast()
        let parts = inner.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        return parts.count == 2
            && parts.allSatisfy { part in
                !part.isEmpty
                    && part.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") }
            }
    }

    private static func randomHex(byteCount: Int) -> String {
        var random = SystemRandomNumberGenerator()
        return (0..<byteCount).map { _ in
            let byte = UInt8.random(in: 0...255, using: &random)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    /// The message as it is sent after `DATA`, lines ending in CRLF (before dot-stuffing).
    public func rendered(boundary: String? = nil) -> String {
        var lines: [String] = []
        lines.append("Date: \(Self.rfc5322Date(date))")
        lines.append(Self.header("From", fromName.map { "\(Self.phrase($0)) <\(from)>" } ?? "<\(from)>"))
        lines.append("To: <\(to)>")
        lines.append(Self.header("Subject", Self.unstructured(subject)))
        lines.append("Message-ID: \(messageID)")
        lines.append("MIME-Version: 1.0")
        lines.append("Auto-Submitted: auto-generated")
        if let html {
            // "=_" never occurs in base64, so no line of a part can be taken for the boundary.
            let boundary = boundary ?? "=_latchkey_" + Self.randomHex(byteCount: 12)
            lines.append("Content-Type: multipart/alternative;\r\n boundary=\"\(boundary)\"")
            lines.append("")
            lines.append("--\(boundary)")
            lines += Self.part(text, type: "text/plain")
            lines.append("--\(boundary)")
            lines += Self.part(html, type: "text/html")
            lines.append("--\(boundary)--")
        } else {
            lines += Self.part(text, type: "text/plain")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The headers and base64 body of one part, line endings made CRLF first (RFC 2046 §4.1.1).
    private static func part(_ body: String, type: String) -> [String] {
        let normalised = body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\n", with: "\r\n")
        let encoded = Data(normalised.utf8).base64EncodedString(options: [
            .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed,
        ])
        return ["Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            + encoded.components(separatedBy: "\r\n")
    }

    /// `Name: value`, folded before encoded words so that no line passes 78 characters (RFC 5322 §2.2.3).
    private static func header(_ name: String, _ value: String) -> String {
        var lines: [String] = []
        var line = "\(name):"
        for word in value.split(separator: " ", omittingEmptySubsequences: false) {
            if line.count + 1 + word.count > 78, line.count > name.count + 1 {
                lines.append(line)
                line = ""
            }
            line += " " + word
        }
        lines.append(line)
        return lines.joined(separator: "\r\n")
    }

    /// Free text for a header: as it is when it is printable ASCII, else as encoded words.
    private static func unstructured(_ text: String) -> String {
        isPlainHeaderText(text) ? text : encodedWords(text)
    }

    /// A display name: an atom sequence when it is letters, digits and spaces, else encoded words
    /// (which a phrase may hold, RFC 2047 §5 (3)).
    private static func phrase(_ text: String) -> String {
        let simple =
            !text.isEmpty
            && text.utf8.allSatisfy { byte in
                byte == UInt8(ascii: " ")
                    || (byte < 0x80 && (Character(UnicodeScalar(byte)).isLetter || Character(UnicodeScalar(byte)).isNumber))
            }
        return simple ? text : encodedWords(text)
    }

    private static func isPlainHeaderText(_ text: String) -> Bool {
        // No "=?" either: a plain text that looks like an encoded word would be decoded as one.
        !text.contains("=?") && text.utf8.allSatisfy { (0x20...0x7E).contains($0) } && text.utf8.count <= 900
    }

    /// `=?utf-8?B?…?=` words of at most 75 characters, split between characters (RFC 2047 §2, §5).
    private static func encodedWords(_ text: String) -> String {
        var words: [[UInt8]] = []
        var chunk: [UInt8] = []
        // Split between Unicode scalars, never inside one's UTF-8 (RFC 2047 §5): a character of
        // many combining marks may span words.
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            // 42 bytes of UTF-8 make 56 characters of base64: with `=?utf-8?B?` and `?=`, 68, which
            // fits after the longest header name used here on one line of 78.
            if chunk.count + bytes.count > 42, !chunk.isEmpty {
                words.append(chunk)
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append(chunk) }
        return words.map { "=?utf-8?B?\(Data($0).base64EncodedString())?=" }.joined(separator: " ")
    }

    /// `Fri, 27 Nov 2026 00:14:51 +0000` (RFC 5322 §3.3), in UTC.
    static func rfc5322Date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[(parts.weekday ?? 1) - 1]), \(parts.day ?? 1) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 1970) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }
}
