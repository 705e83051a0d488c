import Foundation

/// A resource's answer that the user's sign-in is not strong or recent enough for it (RFC 9470
/// §3): `401` with `WWW-Authenticate: Bearer error="insufficient_user_authentication"`, naming
/// what would do. Start a new authorization with its ``acrValues`` and ``maxAge`` (§4), in the
/// browser, and call the resource again with the new token:
///
/// ```swift
/// do {
///     (data, response) = try await authorized.send(request)
/// } catch ClientError.insufficientUserAuthentication(let challenge) {
///     let tokens = try await client.signInWithLoopback(
///         scope: scope, userAgent: SystemBrowser(), acrValues: challenge.acrValues, maxAge: challenge.maxAge)
///     …
/// }
/// ```
public struct StepUpChallenge: Sendable, Equatable, CustomStringConvertible {
    /// The `error` code of the challenge (RFC 9470 §3).
    public static let error = "insufficient_user_authentication"

    /// `acr_values`: the authentication context classes the resource accepts, in order of
    /// preference (any one will do); empty when the challenge names none.
    public var acrValues: [String]
    /// `max_age`: the most seconds since the user signed in that the resource accepts; `nil`
    /// when the challenge names none.
    public var maxAge: Int?
    /// `error_description`: for the developer, not the user.
    public var errorDescription: String?

    public init(acrValues: [String] = [], maxAge: Int? = nil, errorDescription: String? = nil) {
        self.acrValues = acrValues
        self.maxAge = maxAge
        self.errorDescription = errorDescription
    }

    /// Reads a `WWW-Authenticate` header value (RFC 9110 §11.6.1): the first `Bearer` challenge
    /// (or `DPoP`, RFC 9449 §7.1, which a resource uses for a DPoP-bound token) whose `error` is
    /// `insufficient_user_authentication`.
    ///
    /// Scheme and parameter names are compared case-insensitively; a value is a token or a
    /// quoted-string with backslash escapes. Several challenges in one value (as a client that
    /// joins repeated headers with commas makes) are each read, and the others ignored. `nil`
    /// when there is no such challenge, or when the value does not follow the grammar anywhere
    /// (an unterminated quote, a parameter named twice in one challenge, a `max_age` that is not
    /// a whole number of seconds): a challenge half understood is not acted on.
    public init?(wwwAuthenticate header: String) {
        guard let challenges = Self.challenges(in: header),
            let found = challenges.first(where: {
                ($0.scheme == "bearer" || $0.scheme == "dpop") && $0.parameters["error"] == Self.error
            })
        else { return nil }
        var maxAge: Int?
        if let text = found.parameters["max_age"] {
            guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let seconds = Int(text) else {
                return nil
            }
            maxAge = seconds
        }
        self.init(
            acrValues: found.parameters["acr_values"].map { $0.split(separator: " ").map(String.init) } ?? [],
            maxAge: maxAge, errorDescription: found.parameters["error_description"])
    }

    /// What it asks for, for people: `acr_values urn:latchkey:acr:2, max_age 300`.
    public var description: String {
        var parts: [String] = []
        if !acrValues.isEmpty { parts.append("acr_values " + acrValues.joined(separator: " ")) }
        if let maxAge { parts.append("max_age \(maxAge)") }
        return parts.isEmpty ? "a new sign-in" : parts.joined(separator: ", ")
    }

    /// The authorization request parameters that ask for what the challenge names (§4):
    /// `acr_values` and `max_age`, each only when named.
    public var authorizationParameters: [(String, String)] {
        OAuthClient.authenticationParameters(acrValues: acrValues, maxAge: maxAge)
    }

    // MARK: The grammar (RFC 9110 §11.2, §11.6.1, §5.6)

    /// One challenge: its scheme, lowercased, and its parameters by lowercased name.
    struct Challenge {
        var scheme: String
        var parameters: [String: String]
    }

    /// The challenges of a `WWW-Authenticate` value, or `nil` when it does not follow
    /// `1#challenge`, where `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]` and
    /// `auth-param = token BWS "=" BWS ( token / quoted-string )`.
    static func challenges(in header: String) -> [Challenge]? {
        var reader = Reader(Array(header.utf8))
        var challenges: [Challenge] = []
        while true {
            reader.skipListSeparators()
            if reader.atEnd { return challenges }
            guard let scheme = reader.token() else { return nil }
            var parameters: [String: String] = [:]
            if reader.skipWhitespace(), !reader.atEnd, !reader.at(Reader.comma), !reader.skipToken68() {
                // auth-params, separated by commas, until the value ends or a token without "="
                // after it starts the next challenge.
                while true {
                    let mark = reader.index
                    if !parameters.isEmpty {
                        reader.skipListSeparators()
                        if reader.atEnd { break }
                    }
                    guard let name = reader.token() else { return nil }
                    reader.skipWhitespace()
                    guard reader.take(Reader.equals) else {
                        guard !parameters.isEmpty else { return nil }
                        reader.index = mark
                        break
                    }
                    reader.skipWhitespace()
                    let key = name.lowercased()
                    guard parameters[key] == nil else { return nil }
                    if let quoted = reader.quotedString() {
                        parameters[key] = quoted
                    } else if let token = reader.token() {
                        parameters[key] = token
                    } else {
                        return nil
                    }
                    reader.skipWhitespace()
                    if reader.atEnd { break }
                    guard reader.at(Reader.comma) else { return nil }
                }
            }
            challenges.append(Challenge(scheme: scheme.lowercased(), parameters: parameters))
            reader.skipWhitespace()
            guard reader.atEnd || reader.at(Reader.comma) else { return nil }
        }
    }

    /// A cursor over the header's bytes.
    struct Reader {
        let bytes: [UInt8]
        var index = 0

        static let comma = UInt8(ascii: ",")
        static let equals = UInt8(ascii: "=")
        static let quote = UInt8(ascii: "\"")
        static let backslash = UInt8(ascii: "\\")

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        func at(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

        mutating func take(_ byte: UInt8) -> Bool {
            guard at(byte) else { return false }
            index += 1
            return true
        }

        /// Skips spaces and tabs; whether there were any.
        @discardableResult
        mutating func skipWhitespace() -> Bool {
            let start = index
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            return index > start
        }

        /// Skips whitespace and commas: the separators (and empty elements) of a list (§5.6.1).
        mutating func skipListSeparators() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == Self.comma {
                index += 1
            }
        }

        /// `token = 1*tchar` (§5.6.2).
        mutating func token() -> String? {
            let start = index
            while index < bytes.count, Self.isTokenCharacter(bytes[index]) { index += 1 }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A `token68` (§11.2) that stands alone as the challenge's credentials, followed by the
        /// end or a comma: skipped, since it carries no parameters. Otherwise nothing is skipped.
        mutating func skipToken68() -> Bool {
            var end = index
            while end < bytes.count, Self.isToken68Character(bytes[end]) { end += 1 }
            guard end > index else { return false }
            while end < bytes.count, bytes[end] == Self.equals { end += 1 }
            var after = end
            while after < bytes.count, bytes[after] == 0x20 || bytes[after] == 0x09 { after += 1 }
            guard after == bytes.count || bytes[after] == Self.comma else { return false }
            index = end
            return true
        }

        /// `quoted-string` (§5.6.4), unescaped; `nil` when there is none here or it is not closed.
        mutating func quotedString() -> String? {
            guard at(Self.quote) else { return nil }
            var position = index + 1
            var content: [UInt8] = []
            while position < bytes.count {
                var byte = bytes[position]
                position += 1
                if byte == Self.quote {
                    index = position
                    return String(decoding: content, as: UTF8.self)
                }
                if byte == Self.backslash {
                    guard position < bytes.count else { return nil }
                    byte = bytes[position]
                    position += 1
                }
                // qdtext and quoted-pair: HTAB, SP, visible ASCII, obs-text; no other controls.
                guard byte == 0x09 || byte >= 0x20, byte != 0x7F else { return nil }
                content.append(byte)
            }
            return nil
        }

        /// `tchar`: a letter, a digit, or one of ``!#$%&'*+-.^_`|~``.
        static func isTokenCharacter(_ byte: UInt8) -> Bool {
            isAlphanumeric(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }

        /// A `token68` character other than the `=` padding: a letter, a digit, or one of `-._~+/`.
        static func isToken68Character(_ byte: UInt8) -> Bool {
            isAlphanumeric(byte) || "-._~+/".utf8.contains(byte)
        }

        static func isAlphanumeric(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        }
    }
}
