import Foundation
import LatchkeyCore

/// What an e-mailed link does when it is used.
public enum AccountLinkPurpose: String, Sendable, CaseIterable {
    /// Proves that the person owns ``AccountLink/email``, which then becomes the account's address.
    case emailVerification = "email_verification"
    /// Lets the person set a new password for the account.
    case passwordReset = "password_reset"
    /// Lets the person create an account for ``AccountLink/email`` while sign-up is by invitation.
    case invitation
}

/// A link Latchkey e-mailed: its secret is in the link only; the store keeps its SHA-256. It
/// works once, before ``expiresAt`` (docs/threat-model.md AC2).
public struct AccountLink: Sendable, Equatable {
    public var hash: AccountLinkHash
    public var purpose: AccountLinkPurpose
    /// The account it acts on; `nil` for an invitation, which has none yet.
    public var userID: UserID?
    /// The address it was sent to.
    public var email: String
    /// An authorization request to continue with once it is used (sign-up from an app).
    public var pendingRequestID: PendingRequestID?
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?

    public init(
        hash: AccountLinkHash, purpose: AccountLinkPurpose, userID: UserID?, email: String,
        pendingRequestID: PendingRequestID? = nil, createdAt: Date, expiresAt: Date, usedAt: Date? = nil
    ) {
        self.hash = hash
        self.purpose = purpose
        self.userID = userID
        self.email = email
        self.pendingRequestID = pendingRequestID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
}

/// E-mailed links, and the changes that using one makes, each in one transaction with marking
/// the link used: two uses at once, on one instance or two, make one change.
public protocol AccountLinkStore: Sendable {
    /// Stores `link`; for an account's link, the account's earlier unused links of the same
    /// purpose stop working (only the newest address can be verified, only the newest reset works).
    func insertAccountLink(_ link: AccountLink) async throws
    /// The link while it can still be used at `at`: not used, not expired.
    func accountLink(hash: AccountLinkHash, purpose: AccountLinkPurpose, at: Date) async throws -> AccountLink?
    /// Uses an e-mail verification link: the account's address becomes the link's, verified.
    /// - Returns: `false` when the link was used, expired or is unknown, or the account is gone.
    func verifyEmail(link: AccountLinkHash, at: Date) async throws -> Bool
    /// Uses a reset link: sets the password hash and, as ``UserStore/setPasswordHash(username:passwordHash:)``
    /// does, ends every session and revokes everything the account granted.
    /// - Returns: `false` when the link was used, expired or is unknown, or the account is gone.
    func resetPassword(link: AccountLinkHash, passwordHash: String, at: Date) async throws -> Bool
    /// Creates `user`, using the invitation `link` if one is given.
    /// - Returns: `false` when the invitation was used, expired or is unknown.
    /// - Throws: ``StoreError/conflict(_:)`` when the username is taken.
    func insertUser(_ user: User, invitation link: AccountLinkHash?, at: Date) async throws -> Bool
}
