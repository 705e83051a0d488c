import LatchkeyCore

/// A key the store looks rows up by: a string with a role, so that one kind cannot be passed where
/// another is expected (a client id is not a username; a token's hash is not the token).
///
/// Keys are not checked here: ``GuardedStore``, above every store, answers "no such row" for a key
/// holding a NUL character or longer than ``maximumLength``, once for all operations.
public protocol StoreKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text the store keeps.
    var rawValue: String { get }
    /// Wraps stored or already-validated text; input from a request is checked by ``GuardedStore``.
    init(rawValue: String)
}

extension StoreKey {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }

    /// The longest key any store is asked for, in UTF-8 bytes: far above every real one (hashes
    /// are 64, ids at most 36, usernames 64 characters).
    public static var maximumLength: Int { 1_024 }

    /// Whether the key can name a row: no NUL (SQLite's C API would cut the text there, so
    /// `web\0evil` would find `web`, and PostgreSQL refuses it in `text`; docs/threat-model.md
    /// T35) and not over ``maximumLength``.
    public var isUsable: Bool { rawValue.utf8.count <= Self.maximumLength && !rawValue.utf8.contains(0) }
}

/// A keyed hash of a secret: the store keeps `SHA-256(secret)` in lowercase hex, never the secret.
public protocol SecretHash: StoreKey {}

extension SecretHash {
    /// The hash under which the store keeps `secret` (docs/design.md §6).
    public init(of secret: String) { self.init(rawValue: RandomToken.hash(secret)) }
}

/// `client_id` (RFC 6749 §2.2).
public struct ClientID: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A user's stable identifier (the `sub` and `user_id` Latchkey hands out).
public struct UserID: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The name a user signs in with.
public struct Username: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A grant's identifier (a UUIDv7; never leaves the server).
public struct GrantID: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The handle of a pending authorization request, carried by the login and consent forms.
public struct PendingRequestID: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A key failures are counted under (`account:…`, `address:…`, `client:…`).
public struct ThrottleKey: StoreKey {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The hash of an access or refresh token.
public struct TokenHash: SecretHash {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The hash of an authorization code.
public struct CodeHash: SecretHash {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The hash of a browser session's cookie value.
public struct SessionIDHash: SecretHash {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}
