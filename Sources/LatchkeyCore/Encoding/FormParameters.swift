/// Parameters of an `application/x-www-form-urlencoded` body or query (RFC 6749 Appendix B,
/// WHATWG URL §5), decoded strictly: invalid percent-encoding or UTF-8 is refused, array syntax
/// such as `a[]=x` is just a name, and a repeated name is recorded so callers can refuse it
/// (RFC 6749 §3.1, §3.2: "MUST NOT be included more than once").
public struct FormParameters: Sendable, Equatable {
    /// Why a body or query could not be decoded.
    public enum DecodingError: Error, Sendable, Equatable {
        /// A `%` not followed by two hex digits.
        case invalidPercentEncoding
        /// The decoded bytes are not valid UTF-8.
        case invalidUTF8
        /// More parameters than the limit.
        case tooManyParameters
        /// A name or value longer than the limit, in bytes once decoded.
        case parameterTooLong
    }

    /// The longest name or value accepted, in bytes (8 KiB; a `state` of 1,000 bytes and more fits).
    public static let maximumParameterLength = 8 * 1024

    /// Every name/value pair in the order received.
    public private(set) var pairs: [(name: String, value: String)]

    /// Decodes `text`. - Throws: ``DecodingError`` on malformed input.
    /// - Parameter maximumCount: more pairs than this is refused (input-size hardening), as is a
    ///   name or value longer than ``maximumParameterLength``.
    public init(decoding text: some StringProtocol, maximumCount: Int = 256) throws(DecodingError) {
        pairs = []
        let source = Substring(text)
        for piece in source.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            if pairs.count == maximumCount { throw .tooManyParameters }
            let equals = piece.firstIndex(of: UInt8(ascii: "="))
            let rawName = equals.map { piece[piece.startIndex..<$0] } ?? piece[...]
            let rawValue = equals.map { piece[piece.index(after: $0)...] } ?? piece[piece.endIndex...]
            guard rawName.count <= 3 * Self.maximumParameterLength, rawValue.count <= 3 * Self.maximumParameterLength else {
                throw .parameterTooLong
            }
            let name = try Self.percentDecode(rawName)
            if name.isEmpty { continue }
            let value = try Self.percentDecode(rawValue)
            guard name.utf8.count <= Self.maximumParameterLength, value.utf8.count <= Self.maximumParameterLength else {
                throw .parameterTooLong
            }
            pairs.append((name, value))
        }
    }

    /// Builds parameters from pairs (for encoding).
    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { (name: $0.0, value: $0.1) }
    }

    public static func == (lhs: FormParameters, rhs: FormParameters) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The names that occur more than once, in order of first repetition.
    public var repeatedNames: [String] {
        var seen = Set<String>()
        var repeated: [String] = []
        for pair in pairs where !seen.insert(pair.name).inserted && !repeated.contains(pair.name) {
            repeated.append(pair.name)
        }
        return repeated
    }

    /// The names that occur more than once, other than `resource` and `audience`, which RFC 8707
    /// §2 and RFC 8693 §2.1 let a request repeat: the check for the authorization and token endpoints.
    public var repeatedSingleValuedNames: [String] { repeatedNames.filter { $0 != "resource" && $0 != "audience" } }

    /// Whether `name` occurs more than once.
    public func isRepeated(_ name: String) -> Bool {
        pairs.lazy.filter { $0.name == name }.count > 1
    }

    /// The value of `name`, with an empty value treated as absent (RFC 6749 §3.1: "Parameters sent
    /// without a value MUST be treated as if they were omitted"). Use with ``repeatedNames`` checked.
    public subscript(name: String) -> String? {
        guard let value = pairs.first(where: { $0.name == name })?.value, !value.isEmpty else { return nil }
        return value
    }

    /// Every value of `name`, empty ones left out (for multi-valued form fields such as checkboxes).
    public func all(_ name: String) -> [String] {
        pairs.filter { $0.name == name && !$0.value.isEmpty }.map(\.value)
    }

    /// The form-encoded text of these pairs, with everything but unreserved characters percent-encoded.
    public var encoded: String {
        pairs.map { Self.percentEncode($0.name) + "=" + Self.percentEncode($0.value) }.joined(separator: "&")
    }

    /// Percent-encodes every byte outside `A-Z a-z 0-9 - . _ ~` (safe in a query, a fragment and a form).
    public static func percentEncode(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if CodeVerifier.isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentDecode(_ raw: Substring.UTF8View.SubSequence) throws(DecodingError) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                let first = raw.index(after: index)
                guard first < raw.endIndex, raw.index(after: first) < raw.endIndex,
                    let high = hexValue(raw[first]), let low = hexValue(raw[raw.index(after: first)])
                else { throw .invalidPercentEncoding }
                bytes.append(high << 4 | low)
                index = raw.index(after: first)
            } else {
                bytes.append(byte)
            }
            index = raw.index(after: index)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension FormParameters {
    /// Form-decodes one component (`+` is a space, `%XX` a byte), as RFC 6749 Appendix B asks for
    /// the client id and secret inside HTTP Basic credentials.
    public static func percentDecodeComponent(_ text: some StringProtocol) throws(DecodingError) -> String {
        let string = String(text)
        return try percentDecode(string.utf8[...])
    }
}
