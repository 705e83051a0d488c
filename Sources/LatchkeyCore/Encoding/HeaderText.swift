/// Small, allocation-light readers for HTTP header values on hot paths, where Foundation's
/// `trimmingCharacters` and `lowercased()` showed in profiles.
public enum HeaderText {
    /// The credentials of an `Authorization` header using `scheme` (compared without regard to
    /// ASCII case, RFC 9110 §11.1), without surrounding spaces and tabs; `nil` for another scheme.
    public static func credentials(_ header: String, scheme: String) -> Substring? {
        guard let space = header.firstIndex(of: " "), equalsIgnoringASCIICase(header[..<space], scheme) else { return nil }
        return trimmed(header[header.index(after: space)...])
    }

    /// `text` without leading and trailing spaces and tabs (RFC 9110 §5.6.3).
    public static func trimmed(_ text: Substring) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else {
            return text[text.endIndex...]
        }
        return text[first...last]
    }

    /// Whether `text` starts with `prefix`, ignoring ASCII case.
    public static func hasPrefixIgnoringASCIICase(_ text: Substring, _ prefix: String) -> Bool {
        equalsIgnoringASCIICase(text.utf8.prefix(prefix.utf8.count), Substring(prefix).utf8)
    }

    /// Whether `a` equals `b` ignoring ASCII case.
    public static func equalsIgnoringASCIICase(_ a: Substring, _ b: String) -> Bool {
        equalsIgnoringASCIICase(a.utf8, Substring(b).utf8)
    }

    private static func equalsIgnoringASCIICase(_ a: Substring.UTF8View, _ b: Substring.UTF8View) -> Bool {
        guard a.count == b.count else { return false }
        var other = b.makeIterator()
        for byte in a where folded(byte) != folded(other.next()!) { return false }
        return true
    }

    private static func folded(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
}
