import Foundation

/// How a user signed in: the methods as `amr` values (RFC 8176 §2), in the order they were used,
/// the upstream identity provider of a federated sign-in, and the level they come to, the `acr`
/// Latchkey states (docs/accounts.md, "Second factors").
public struct AuthenticationMethods: Sendable, Equatable, CustomStringConvertible {
    /// `amr` values, such as `pwd`, `otp`, `mfa`, `fed`.
    public private(set) var values: [String]
    /// The upstream identity provider a federated sign-in went through, by its name here: the ID
    /// token's `idp`; `nil` for every other sign-in.
    public private(set) var identityProvider: String?

    public init(_ values: [String], identityProvider: String? = nil) {
        self.values = values
        self.identityProvider = identityProvider
    }

    /// A password alone: `["pwd"]`. Sessions and codes from before second factors read as this.
    public static let password = AuthenticationMethods(["pwd"])
    /// A password, then a one-time code (an authenticator's or a recovery code): `["pwd", "otp", "mfa"]`.
    public static let passwordAndOneTimeCode = password.adding(secondFactor: "otp")

    /// A sign-in at the upstream identity provider `name`: `["fed"]` (the value Microsoft's
    /// identity platform uses for a federated assertion; RFC 8176 registers none).
    public static func federated(through name: String) -> AuthenticationMethods {
        AuthenticationMethods(["fed"], identityProvider: name)
    }

    /// These methods followed by a second factor: `method` (`otp`, `hwk`, `swk`) and `mfa`.
    public func adding(secondFactor method: String) -> AuthenticationMethods {
        AuthenticationMethods(values + [method, "mfa"], identityProvider: identityProvider)
    }

    /// Whether more than one factor was used (`mfa`, RFC 8176 §2).
    public var isMultiFactor: Bool { values.contains("mfa") }

    /// The level these methods reach.
    public var level: AuthenticationLevel { isMultiFactor ? .twoFactors : .oneFactor }

    /// The values space-separated, as the store keeps them, after `idp=NAME` for a federated
    /// sign-in (first, so the sessions of one provider are found by their prefix).
    public var description: String {
        ((identityProvider.map { ["\(Self.providerPrefix)\($0)"] } ?? []) + values).joined(separator: " ")
    }

    /// What ``description`` puts before the identity provider's name.
    static let providerPrefix = "idp="

    /// Methods read back from the store; `nil` or empty text is ``password``, as everything made
    /// before second factors existed came from a password.
    /// Every token read brings its grant's methods, so this reads them in one pass: the provider,
    /// when there is one, is the first word (``description``).
    public init(storeValue: String?) {
        var words = (storeValue ?? "").split(separator: " ")
        var provider: String?
        if let first = words.first, first.hasPrefix(Self.providerPrefix) {
            provider = String(first.dropFirst(Self.providerPrefix.count))
            words.removeFirst()
        }
        self = words.isEmpty ? .password : AuthenticationMethods(words.map(String.init))
        identityProvider = provider
    }
}

/// An authentication context class (`acr`, OpenID Connect Core §2) Latchkey states and honours in
/// `acr_values`, from the weakest.
public enum AuthenticationLevel: String, Sendable, CaseIterable, Comparable {
    /// One factor: a password.
    case oneFactor = "urn:latchkey:acr:1"
    /// Two factors: a password and a one-time code.
    case twoFactors = "urn:latchkey:acr:2"

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The level an `acr_values` request parameter demands: the weakest of the values Latchkey
    /// knows, since reaching any one of them satisfies the request; `nil` when it names none of
    /// them (the parameter is a preference, OpenID Connect Core §3.1.2.1, so unknown values are
    /// ignored).
    public static func demanded(by acrValues: [String]) -> AuthenticationLevel? {
        acrValues.compactMap(AuthenticationLevel.init(rawValue:)).min()
    }
}
