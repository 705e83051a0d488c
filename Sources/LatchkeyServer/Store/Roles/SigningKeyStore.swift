import Foundation

/// A JWS algorithm the server signs with (RFC 7518 §3.1).
public enum SigningAlgorithm: String, Sendable, Codable, CaseIterable {
    /// RSASSA-PKCS1-v1_5 with SHA-256: what every OpenID Connect relying party must accept.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256: smaller and much faster to sign.
    case es256 = "ES256"
}

/// One of the server's signing keys as the store keeps it: the public half as a JWK, the private
/// half sealed (AES-GCM) under the key-encryption key, which the store never holds.
public struct SigningKeyRecord: Sendable, Equatable {
    /// `kid`: the key's RFC 7638 thumbprint.
    public var kid: String
    public var algorithm: SigningAlgorithm
    /// The public key as one JWK (RFC 7517), as the JWKS publishes it.
    public var publicJWK: String
    /// The private key, sealed; only ``SigningKeyring`` opens it.
    public var sealedPrivateKey: String
    public var createdAt: Date
    /// Published from creation, used for signing from here on (relying parties that cache the
    /// key set have until then to fetch it again).
    public var activatesAt: Date
    /// Set when a newer key of the same algorithm replaces it: the key stays published until
    /// here, which is after every token it signed has expired. `nil` while it is the newest.
    public var publishedUntil: Date?

    public init(
        kid: String, algorithm: SigningAlgorithm, publicJWK: String, sealedPrivateKey: String, createdAt: Date,
        activatesAt: Date, publishedUntil: Date? = nil
    ) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicJWK = publicJWK
        self.sealedPrivateKey = sealedPrivateKey
        self.createdAt = createdAt
        self.activatesAt = activatesAt
        self.publishedUntil = publishedUntil
    }
}

/// The signing keys, shared by every instance through the store, so each signs with the same key
/// and publishes the same set.
public protocol SigningKeyStore: Sendable {
    /// Every key still published at `at` (`published_until` unset or later), oldest first.
    func signingKeys(at: Date) async throws -> [SigningKeyRecord]
    /// Stores `key` and, in the same transaction, sets `published_until` to `retiredKeysPublishedUntil`
    /// on every other key of its algorithm that has none yet: the key it replaces.
    func insertSigningKey(_ key: SigningKeyRecord, retiredKeysPublishedUntil: Date) async throws
}
