import Foundation

/// Base64url without padding (RFC 4648 §5, as RFC 7636 Appendix A uses it).
public enum Base64URL {
    /// Encodes bytes as base64url with the trailing `=` padding removed.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Whether every character is in the base64url alphabet (`A-Z a-z 0-9 - _`).
    public static func isAlphabet(_ text: Substring.UTF8View) -> Bool {
        text.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }
}
