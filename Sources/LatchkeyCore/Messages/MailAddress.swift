/// An e-mail address as an SMTP envelope and a message header carry it: `local@domain`, with the
/// local part a dot-atom (RFC 5322 §3.2.3) and the domain dot-separated labels of letters, digits
/// and hyphens (RFC 5321 §4.1.2), or either with UTF-8 beyond ASCII (RFC 6531, which needs the
/// relay's `SMTPUTF8`). Nothing else is accepted: no quoted local parts, no address literals, no
/// comments, no spaces or control characters, so an address can never end a command line or a
/// header early (docs/threat-model.md, "E-mail").
public struct MailAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address as it was given, which is the address as it is sent.
    public let rawValue: String

    /// `nil` unless `text` is an address of the form above.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        // RFC 5321 §4.5.3.1.1 and §4.5.3.1.2: 64 octets of local part, 255 of domain.
        guard (1...64).contains(local.count), (1...253).contains(domain.count) else { return nil }
        guard Self.isDotAtom(local, allowed: Self.isAtext), Self.isDotAtom(domain, allowed: Self.isLabelByte) else {
            return nil
        }
        // Labels neither start nor end with a hyphen (RFC 1035 §2.3.1).
        for label in domain.split(separator: UInt8(ascii: ".")) {
            guard label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-"), label.count <= 63 else { return nil }
        }
        rawValue = text
    }

    /// Whether the address holds UTF-8 beyond ASCII, which only a relay offering `SMTPUTF8` takes.
    public var needsSMTPUTF8: Bool { rawValue.utf8.contains { $0 >= 0x80 } }

    /// The domain, after the last `@`.
    public var domain: Substring { rawValue[rawValue.index(after: rawValue.lastIndex(of: "@")!)...] }

    public var description: String { rawValue }

    /// Runs of allowed bytes separated by single dots, with no dot first or last.
    private static func isDotAtom(_ bytes: ArraySlice<UInt8>, allowed: (UInt8) -> Bool) -> Bool {
        var previousWasDot = true
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if previousWasDot { return false }
                previousWasDot = true
            } else {
                guard allowed(byte) else { return false }
                previousWasDot = false
            }
        }
        return !previousWasDot
    }

    /// `atext` (RFC 5322 §3.2.3), or a byte of a UTF-8 sequence (RFC 6532 §3.2).
    private static func isAtext(_ byte: UInt8) -> Bool {
        if byte >= 0x80 { return true }
        if isAlphanumeric(byte) { return true }
        return "!#$%&'*+-/=?^_`{|}~".utf8.contains(byte)
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || isAlphanumeric(byte) || byte == UInt8(ascii: "-")
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
