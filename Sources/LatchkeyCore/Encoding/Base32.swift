/// Base32 (RFC 4648 §6): the alphabet `A-Z 2-7`, in which authenticator apps take a TOTP secret.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// `bytes` in base32, without `=` padding (as `otpauth://` URIs carry it).
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of a base32 text, ignoring case, spaces and trailing `=`; `nil` for any other
    /// character or leftover bits that are not zero.
    public static func decode(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = 0
        var bits = 0
        let characters = text.utf8.filter { $0 != UInt8(ascii: " ") }
        let body = characters.reversed().drop(while: { $0 == UInt8(ascii: "=") }).reversed()
        for character in body {
            let upper = character >= UInt8(ascii: "a") && character <= UInt8(ascii: "z") ? character - 32 : character
            guard let value = alphabet.firstIndex(of: upper) else { return nil }
            buffer = (buffer << 5) | value
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((buffer >> (bits - 8)) & 255))
                bits -= 8
            }
            buffer &= (1 << bits) - 1
        }
        return buffer == 0 ? bytes : nil
    }
}
