import Crypto
import Foundation

/// The public keys a party proves itself with: a JWK Set (RFC 7517 §5) of EC P-256, RSA (2048
/// bits or more) and Ed25519 keys, each read through ``PublicJWK``. A client registered for
/// `private_key_jwt` has one; so has an issuer whose assertions this server trusts.
public struct AssertionKeySet: Sendable {
    public struct Entry: Sendable {
        /// `kid`, when the key has one.
        public var kid: String?
        public var key: PublicJWK
        /// `alg`, when the key names the one algorithm it is for.
        public var algorithm: String?
    }

    public let entries: [Entry]

    /// The largest key set read, in bytes.
    public static let maximumSize = 64 * 1024

    /// Reads a key set. Keys for encryption (`use` other than `sig`), of other kinds, or whose
    /// `alg` does not fit them are left out; a key holding private members refuses the whole set,
    /// since its holder has leaked it. A set with no usable key is refused.
    public init(json: Data) throws(JWTAssertion.Rejection) {
        guard json.count <= Self.maximumSize,
            let document = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
            let list = document["keys"] as? [Any]
        else { throw JWTAssertion.Rejection("The key set is not a JSON object with a keys array (RFC 7517 §5).") }
        var entries: [Entry] = []
        for case let object as [String: Any] in list {
            // A private key anywhere in the set, an encryption key's too, means it has leaked.
            if ["d", "p", "q", "dp", "dq", "qi", "k"].contains(where: { object[$0] != nil }) {
                throw JWTAssertion.Rejection("A key in the set holds private key material.")
            }
            if let use = object["use"] as? String, use != "sig" { continue }
            guard let key = try? PublicJWK(parsing: object) else { continue }
            let algorithm = object["alg"] as? String
            if let algorithm, !key.algorithms.contains(algorithm) { continue }
            entries.append(Entry(kid: object["kid"] as? String, key: key, algorithm: algorithm))
        }
        guard !entries.isEmpty else {
            throw JWTAssertion.Rejection("The key set holds no EC P-256, RSA (2048 bits or more) or Ed25519 signing key.")
        }
        self.entries = entries
    }

    /// The key that verifies a JWS with this header: the one with its `kid` or, when the header
    /// names none, the only key that can sign with its `alg`.
    func key(kid: String?, algorithm: String) -> PublicJWK? {
        let fitting = entries.filter { ($0.algorithm ?? algorithm) == algorithm && $0.key.algorithms.contains(algorithm) }
        if let kid { return fitting.first { $0.kid == kid }?.key }
        return fitting.count == 1 ? fitting[0].key : nil
    }

    /// Whether a header's `kid` names no key of the set: the set may have been replaced since it was read.
    public func lacks(kid: String?) -> Bool { kid.map { kid in !entries.contains { $0.kid == kid } } ?? false }
}

/// A JWT that asserts something to this server (RFC 7523 §3), checked for everything that needs
/// no state: its signature by one of the issuer's keys, `iss`, `sub`, `aud`, `exp`, `nbf` and
/// `jti`. What the caller still checks is that ``jti`` was not seen before, and the claims only its
/// kind of assertion carries (``claims``).
///
/// Client assertions (RFC 7523 §2.2, `private_key_jwt`) are one kind: `iss` and `sub` are the
/// client's id, `aud` this server.
public struct JWTAssertion: Sendable {
    public var issuer: String
    public var subject: String
    public var audiences: [String]
    public var jti: String
    public var expiresAt: Date
    /// `typ` of the JWS header, when it has one.
    public var type: String?
    /// The payload, for the claims only some assertions carry.
    public var claims: Data

    /// The signing algorithms accepted (`token_endpoint_auth_signing_alg_values_supported`); never
    /// `none` nor an HMAC, whose key would be a shared secret.
    public static let algorithms = ["ES256", "RS256", "PS256", "EdDSA"]
    /// The largest assertion read, in bytes.
    public static let maximumSize = 16 * 1024

    /// Why an assertion was refused: a sentence for `error_description`.
    public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        /// Whether the signature had verified: only then may the sentence go to whoever sent the
        /// assertion, who then holds the key. Before, it could tell a stranger which client ids
        /// have keys, and which `kid`s they have.
        public var signatureVerified: Bool
        public init(_ description: String, signatureVerified: Bool = false) {
            self.description = description
            self.signatureVerified = signatureVerified
        }
    }

    /// The members of an assertion read before it is trusted, to find who claims to have signed it.
    public struct Unverified: Sendable {
        public var issuer: String?
        public var subject: String?
        public var kid: String?
    }

    /// Reads who an assertion says it comes from, without checking anything.
    public static func unverified(_ token: String) -> Unverified? {
        guard token.utf8.count <= maximumSize else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let payloadData = Base64URL.decode(parts[1]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else { return nil }
        return Unverified(issuer: claims["iss"] as? String, subject: claims["sub"] as? String, kid: header["kid"] as? String)
    }

    /// Checks `token`.
    /// - Parameters:
    ///   - keys: the issuer's keys.
    ///   - audiences: what `aud` may name (RFC 7523 §3 item 3: this server's issuer identifier or
    ///     the endpoint's URL); one of its values must be one of these.
    ///   - maximumLifetime: how far ahead of `now` `exp` may be, so that the `jti` kept against
    ///     replay is kept for a bounded time.
    ///   - leeway: the clock difference allowed on `exp`, `nbf` and `iat`.
    public init(
        verifying token: String, keys: AssertionKeySet, audiences: Set<String>, now: Date,
        maximumLifetime: TimeInterval = 3600, leeway: TimeInterval = 60
    ) throws(Rejection) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= Self.maximumSize, parts.count == 3,
            let headerData = Base64URL.decode(parts[0]), let payloadData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else { throw Rejection("The assertion is not a JWS in compact form with a JSON payload.") }
        guard let alg = header["alg"] as? String, Self.algorithms.contains(alg) else {
            throw Rejection("The assertion's alg must be one of \(Self.algorithms.joined(separator: ", ")).")
        }
        // A header that asks for more than a plain JWS (crit, an embedded or remote key) is not one
        // this server reads; the key is the registered one, never one the token brings.
        for member in ["crit", "jwk", "jku", "x5u", "x5c"] where header[member] != nil {
            throw Rejection("The assertion's header must not carry \(member): its key is the registered one.")
        }
        let kid = header["kid"] as? String
        guard let key = keys.key(kid: kid, algorithm: alg) else {
            throw Rejection(
                kid.map { "No registered key has the kid \($0) and signs with \(alg)." }
                    ?? "The assertion names no kid, and not exactly one registered key signs with \(alg).")
        }
        let input = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: input, algorithm: alg) else {
            throw Rejection("The assertion's signature does not verify with the registered key.")
        }
        // From here on the sender holds the key: it may be told what is wrong.
        func told(_ description: String) -> Rejection { Rejection(description, signatureVerified: true) }
        guard let issuer = claims["iss"] as? String, !issuer.isEmpty else { throw told("The assertion has no iss.") }
        guard let subject = claims["sub"] as? String, !subject.isEmpty else { throw told("The assertion has no sub.") }
        let audienceList: [String]
        switch claims["aud"] {
        case let one as String: audienceList = [one]
        case let many as [Any]: audienceList = many.compactMap { $0 as? String }
        default: throw told("The assertion has no aud.")
        }
        guard audienceList.contains(where: audiences.contains) else {
            throw told("The assertion's aud must name this server: \(audiences.sorted().joined(separator: " or ")).")
        }
        func instant(_ name: String) throws(Rejection) -> Date? {
            guard let value = claims[name] else { return nil }
            guard let number = value as? NSNumber, !(value is Bool), number.doubleValue.isFinite else {
                throw told("The assertion's \(name) must be a number of seconds since 1970.")
            }
            return Date(timeIntervalSince1970: number.doubleValue)
        }
        guard let expiresAt = try instant("exp") else { throw told("The assertion has no exp.") }
        guard expiresAt > now.addingTimeInterval(-leeway) else { throw told("The assertion has expired.") }
        guard expiresAt <= now.addingTimeInterval(maximumLifetime + leeway) else {
            throw told("The assertion's exp is more than \(Int(maximumLifetime)) seconds ahead; make a shorter-lived one.")
        }
        if let notBefore = try instant("nbf"), notBefore > now.addingTimeInterval(leeway) {
            throw told("The assertion is not valid yet (nbf).")
        }
        if let issuedAt = try instant("iat"), issuedAt > now.addingTimeInterval(leeway) {
            throw told("The assertion's iat is in the future.")
        }
        guard let jti = claims["jti"] as? String, !jti.isEmpty, jti.utf8.count <= 256 else {
            throw told("The assertion needs a jti of 1 to 256 characters, used once.")
        }
        self.issuer = issuer
        self.subject = subject
        self.audiences = audienceList
        self.jti = jti
        self.expiresAt = expiresAt
        type = header["typ"] as? String
        self.claims = payloadData
    }
}

extension JWTAssertion {
    /// `client_assertion_type` for a JWT (RFC 7523 §2.2).
    public static let clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// Makes a client assertion (RFC 7523 §2.2, §3) signed ES256 with `key`: `iss` and `sub` the
    /// client's id, `aud` the authorization server's issuer identifier, a fresh `jti`, and `exp`
    /// `lifetime` seconds after `issuedAt`.
    public static func clientAssertion(
        key: P256.Signing.PrivateKey, kid: String?, clientID: String, audience: String, issuedAt: Date = Date(),
        lifetime: TimeInterval = 60, jti: String = RandomToken.randomBase64URL(byteCount: 16)
    ) throws -> String {
        var header = #"{"alg":"ES256","typ":"JWT""#
        if let kid { header += #","kid":"# + JSONText.quote(kid) }
        header += "}"
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims =
            #"{"iss":"# + JSONText.quote(clientID) + #","sub":"# + JSONText.quote(clientID) + #","aud":"#
            + JSONText.quote(audience) + #","jti":"# + JSONText.quote(jti) + #","iat":"# + String(iat) + #","exp":"#
            + String(iat + Int(lifetime)) + "}"
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
