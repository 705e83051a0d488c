import LatchkeyCore

/// A key the store looks rows up by: a string with a role, so that one kind cannot be passed where
/// another is expected (a client id is not a username; a token's hash is not the token).
///
/// Keys are not checked here: a statement that binds a key that is not ``isUsable`` is not run
/// (``SQLStatement/isRunnable``), so it finds no row and changes none.
public struct StoreKey<Role: KeyRole>: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text the store keeps.
    public let rawValue: String

    /// Wraps stored or already-validated text; input from a request is checked where it enters a statement.
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }

    /// The longest key any store is asked for, in UTF-8 bytes: far above every real one (hashes
    /// are 64, ids at most 36, usernames 64 characters, a client id that is a metadata document's
    /// URL at most 1,024 bytes, and a throttle key that prefix and such an id).
    public static var maximumLength: Int { 2_048 }

    /// Whether the key can name a row: no NUL (SQLite's C API would cut the text there, so
    /// `web\0evil` would find `web`, and PostgreSQL refuses it in `text`; docs/threat-model.md
    /// T35) and not over ``maximumLength``.
    public var isUsable: Bool { rawValue.utf8.count <= Self.maximumLength && !rawValue.utf8.contains(0) }
}

/// What a ``StoreKey`` names; the roles are empty types.
public protocol KeyRole: Sendable {}

/// The role of a hash of a secret: the store keeps `SHA-256(secret)` in lowercase hex, never the secret.
public protocol SecretHashRole: KeyRole {}

extension StoreKey where Role: SecretHashRole {
    /// The hash under which the store keeps `secret` (docs/design.md §6) when it is kept whole: a
    /// session id, a JWT access token, or a code or token issued before split tokens. A split
    /// token's row is keyed by its selector instead: look it up through ``PresentedSecret``.
    public init(of secret: String) { self.init(rawValue: RandomToken.hash(secret)) }

    /// The key of a split token's row: its selector (``SplitToken/selector``).
    public init(issued token: SplitToken) { self.init(rawValue: token.selector) }
}

/// A code or token as a client presented it: the key of the row it names, and what that row must
/// hold for it to be the secret Latchkey issued (docs/design.md §6).
public struct PresentedSecret<Role: SecretHashRole>: Sendable {
    /// The selector of a split token; the SHA-256 of anything else.
    public let key: StoreKey<Role>
    /// SHA-256 of a split token's verifier; `nil` when ``key`` is the hash of the whole value.
    private let verifierDigest: String?

    public init(_ value: String) {
        if let split = SplitToken(parsing: value) {
            key = StoreKey(issued: split)
            verifierDigest = split.verifierDigest
        } else {
            key = StoreKey(of: value)
            verifierDigest = nil
        }
    }

    /// Whether the row found under ``key``, holding `stored` (its verifier's digest; `nil` for a
    /// secret kept whole), is this secret's. A selector alone is public and proves nothing: the
    /// verifier must match, compared in constant time.
    public func matches(stored: String?) -> Bool {
        switch (verifierDigest, stored) {
        case (nil, nil): true  // the key is the whole secret's hash, so finding the row was the check
        case (let presented?, let stored?): ConstantTime.equals(presented, stored)
        default: false
        }
    }
}

/// The roles of ``StoreKey``.
public enum KeyRoles {
    public enum Client: KeyRole {}
    public enum User: KeyRole {}
    public enum Username: KeyRole {}
    public enum Grant: KeyRole {}
    public enum PendingRequest: KeyRole {}
    public enum Throttle: KeyRole {}
    public enum OutboxMessage: KeyRole {}
    public enum SecondFactor: KeyRole {}
    public enum Passkey: KeyRole {}
    public enum PasskeyChallenge: SecretHashRole {}
    public enum Token: SecretHashRole {}
    public enum Code: SecretHashRole {}
    public enum Session: SecretHashRole {}
    public enum AccountLink: SecretHashRole {}
    public enum FederationState: SecretHashRole {}
}

/// `client_id` (RFC 6749 §2.2).
public typealias ClientID = StoreKey<KeyRoles.Client>
/// A user's stable identifier (the `sub` and `user_id` Latchkey hands out).
public typealias UserID = StoreKey<KeyRoles.User>
/// The name a user signs in with.
public typealias Username = StoreKey<KeyRoles.Username>
/// A grant's identifier (a UUIDv7; never leaves the server).
public typealias GrantID = StoreKey<KeyRoles.Grant>
/// The handle of a pending authorization request, carried by the login and consent forms.
public typealias PendingRequestID = StoreKey<KeyRoles.PendingRequest>
/// A key failures are counted under (`account:…`, `address:…`, `client:…`).
public typealias ThrottleKey = StoreKey<KeyRoles.Throttle>
/// The key of an access or refresh token's row: a split token's selector, or the SHA-256 of a
/// token kept whole (a JWT, or one issued before split tokens).
public typealias TokenHash = StoreKey<KeyRoles.Token>
/// The key of an authorization code's row: its selector, or the SHA-256 of a code kept whole
/// (one issued before split tokens, or a device code's approval).
public typealias CodeHash = StoreKey<KeyRoles.Code>
/// The hash of a browser session's cookie value.
public typealias SessionIDHash = StoreKey<KeyRoles.Session>
/// A message's row in the outbox (a time-ordered id; never leaves the server).
public typealias OutboxMessageID = StoreKey<KeyRoles.OutboxMessage>
/// The SHA-256 of an e-mailed link's secret (``AccountLink``).
public typealias AccountLinkHash = StoreKey<KeyRoles.AccountLink>
/// A second factor's row (a time-ordered id; never leaves the server but in the account's pages).
public typealias SecondFactorID = StoreKey<KeyRoles.SecondFactor>
/// A passkey's credential id (WebAuthn), base64url.
public typealias CredentialID = StoreKey<KeyRoles.Passkey>
/// The SHA-256 of a WebAuthn challenge Latchkey issued.
public typealias PasskeyChallengeHash = StoreKey<KeyRoles.PasskeyChallenge>
/// The SHA-256 of the `state` of a round trip to an upstream identity provider.
public typealias FederationStateHash = StoreKey<KeyRoles.FederationState>
