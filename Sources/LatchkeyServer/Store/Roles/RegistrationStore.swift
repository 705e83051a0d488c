import Foundation
import LatchkeyCore

/// An initial access token (RFC 7591 §3): lets whoever holds it register clients until it expires.
public struct InitialAccessToken: Sendable, Equatable {
    /// A short handle to list and revoke it by (not secret).
    public var id: String
    /// SHA-256 of the token.
    public var tokenHash: String
    public var createdAt: Date
    public var expiresAt: Date

    public init(id: String, tokenHash: String, createdAt: Date, expiresAt: Date) {
        self.id = id
        self.tokenHash = tokenHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The initial access tokens of dynamic client registration (RFC 7591).
public protocol RegistrationStore: Sendable {
    func insertInitialAccessToken(_ token: InitialAccessToken) async throws
    /// The token with this hash, expired or not.
    func initialAccessToken(hash: String) async throws -> InitialAccessToken?
    /// Every token not yet purged, newest first.
    func initialAccessTokens() async throws -> [InitialAccessToken]
    /// - Returns: whether a token had this id.
    func deleteInitialAccessToken(id: String) async throws -> Bool
}
