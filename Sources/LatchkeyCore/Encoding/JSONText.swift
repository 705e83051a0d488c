/// Minimal JSON string writing for the fixed-shape bodies Latchkey sends on hot paths, where a
/// general encoder would cost more than the rest of the request (RFC 8259 §7).
public enum JSONText {
    /// `text` as a quoted JSON string, with `"`, `\` and control characters escaped.
    public static func quote(_ text: String) -> String {
        // Most values (tokens, ids, scopes) need no escape: copy them whole.
        if text.utf8.allSatisfy({
            $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "<")
        }) {
            return "\"" + text + "\""
        }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<": out += "\\u003c"  // harmless in JSON, keeps bodies inert if sniffed as HTML
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
