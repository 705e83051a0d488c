import Foundation
import LatchkeyCore

/// A passkey: a WebAuthn credential registered to an account (docs/accounts.md, "Passkeys").
public struct Passkey: Sendable, Equatable {
    public var credentialID: CredentialID
    public var userID: UserID
    /// What the person called it ("Phone", "Laptop").
    public var name: String
    /// The credential's public key (its COSE algorithm and parts, as ``COSEKey`` keeps them).
    public var publicKey: String
    /// The authenticator's signature counter at the last use; 0 for those that keep none.
    public var signCount: Int
    /// Whether the credential may be synced to the person's other devices (`BE`).
    public var backupEligible: Bool
    public var createdAt: Date
    public var lastUsedAt: Date?

    public init(
        credentialID: CredentialID, userID: UserID, name: String, publicKey: String, signCount: Int,
        backupEligible: Bool, createdAt: Date, lastUsedAt: Date? = nil
    ) {
        self.credentialID = credentialID
        self.userID = userID
        self.name = name
        self.publicKey = publicKey
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// What a WebAuthn challenge was issued for.
public enum PasskeyPurpose: String, Sendable, CaseIterable {
    /// Registering a new passkey on the account page.
    case registration
    /// Signing in with a passkey alone (no username).
    case signIn = "sign_in"
    /// The second step after a password, or a step-up.
    case confirmation
    /// The console's re-authentication: the passkey stands in for the password, so it must
    /// verify the user.
    case reauthentication

    /// Whether the authenticator must verify the user (`UV`): a passkey that stands alone or in
    /// place of the password; as the second step, after a password, presence is enough.
    public var needsUserVerification: Bool { self == .signIn || self == .reauthentication }
}

/// A challenge issued to one browser session: only that session can use it, once, before it expires.
public struct PasskeyChallenge: Sendable, Equatable {
    public var hash: PasskeyChallengeHash
    public var sessionIDHash: SessionIDHash
    public var purpose: PasskeyPurpose
    /// The account it is for (registration, confirmation); `nil` for a sign-in, which names nobody.
    public var userID: UserID?
    public var expiresAt: Date

    public init(
        hash: PasskeyChallengeHash, sessionIDHash: SessionIDHash, purpose: PasskeyPurpose, userID: UserID?, expiresAt: Date
    ) {
        self.hash = hash
        self.sessionIDHash = sessionIDHash
        self.purpose = purpose
        self.userID = userID
        self.expiresAt = expiresAt
    }
}

/// Passkeys and their challenges. A challenge is taken in one `DELETE … RETURNING`, so it works
/// once however many responses come at once; a use moves the signature counter in one
/// conditional statement (docs/threat-model.md PK2, PK3).
public protocol PasskeyStore: Sendable {
    /// - Throws: ``StoreError/conflict(_:)`` when the credential id is registered already.
    func insertPasskey(_ passkey: Passkey) async throws
    func passkeys(userID: UserID) async throws -> [Passkey]
    func passkey(credentialID: CredentialID) async throws -> Passkey?
    /// Records a use with the authenticator's counter `signCount`: refused when the counter did not
    /// move past the stored one (a cloned authenticator), unless both are 0 (one that keeps none).
    func usePasskey(credentialID: CredentialID, signCount: Int, at: Date) async throws -> Bool
    /// - Returns: whether the account had that passkey.
    func deletePasskey(credentialID: CredentialID, userID: UserID) async throws -> Bool
    /// Removes every passkey of the account (an administrator's reset).
    func deletePasskeys(userID: UserID) async throws
    func insertPasskeyChallenge(_ challenge: PasskeyChallenge) async throws
    /// Takes (deletes) the challenge if it was issued to this session and has not expired.
    func takePasskeyChallenge(hash: PasskeyChallengeHash, sessionIDHash: SessionIDHash, at: Date) async throws
        -> PasskeyChallenge?
}
