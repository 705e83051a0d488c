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

    /// Whether `text` starts with `prefix`, ignoring ASCII case (`prefix` given in lowercase).
    public static func hasPrefixIgnoringASCIICase(_ text: some StringProtocol, _ prefix: String) -> Bool {
        text.utf8.count >= prefix.utf8.count && equalsIgnoringASCIICase(text.utf8.prefix(prefix.utf8.count), prefix.utf8)
    }

    /// Whether `a` equals `b` ignoring ASCII case.
    public static func equalsIgnoringASCIICase(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        equalsIgnoringASCIICase(a.utf8, b.utf8)
    }

    private static func equalsIgnoringASCIICase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        func folded(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        return a.count == b.count && zip(a, b).allSatisfy { folded($0) == folded($1) }
    }
}
