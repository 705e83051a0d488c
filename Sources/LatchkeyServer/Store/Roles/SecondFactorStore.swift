import Foundation
import LatchkeyCore

/// The kinds of second factor an account can have.
public enum SecondFactorKind: String, Sendable, CaseIterable {
    /// A TOTP authenticator (RFC 6238): ``SecondFactor/secret`` is its key, sealed with the
    /// key-encryption key.
    case totp
    /// A single-use recovery code: ``SecondFactor/secret`` is its SHA-256.
    case recoveryCode = "recovery_code"
}

/// One second factor of an account (docs/threat-model.md MF1–MF6).
public struct SecondFactor: Sendable, Equatable {
    public var id: SecondFactorID
    public var userID: UserID
    public var kind: SecondFactorKind
    /// What the person called it (an authenticator's name); empty for recovery codes.
    public var name: String
    /// A TOTP key sealed with the key-encryption key, or a recovery code's SHA-256.
    public var secret: String
    /// The last TOTP time step a code was accepted for: only a later step's code is accepted
    /// next, so each code works once (RFC 6238 §5.2).
    public var lastStep: Int
    public var createdAt: Date
    /// When a TOTP authenticator was confirmed with a first code; until then it does not count.
    public var confirmedAt: Date?
    public var lastUsedAt: Date?
    /// When a recovery code was used up.
    public var usedAt: Date?

    public init(
        id: SecondFactorID, userID: UserID, kind: SecondFactorKind, name: String, secret: String, lastStep: Int = 0,
        createdAt: Date, confirmedAt: Date? = nil, lastUsedAt: Date? = nil, usedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.kind = kind
        self.name = name
        self.secret = secret
        self.lastStep = lastStep
        self.createdAt = createdAt
        self.confirmedAt = confirmedAt
        self.lastUsedAt = lastUsedAt
        self.usedAt = usedAt
    }

    /// Whether it can be used to sign in: a confirmed authenticator, or an unused recovery code.
    public var isActive: Bool {
        switch kind {
        case .totp: confirmedAt != nil
        case .recoveryCode: usedAt == nil
        }
    }
}

/// Second factors. Every use is one conditional statement on the factor's row, so of two uses of
/// one code at once, on one instance or two, one succeeds (docs/threat-model.md MF2).
public protocol SecondFactorStore: Sendable {
    /// The account's factors, oldest first, used recovery codes included.
    func secondFactors(userID: UserID) async throws -> [SecondFactor]
    /// Stores a TOTP authenticator not yet confirmed, dropping the account's other unconfirmed ones.
    func insertPendingTOTP(_ factor: SecondFactor) async throws
    /// Confirms the unconfirmed authenticator `id` with a first code of time step `step`: it
    /// replaces the account's confirmed authenticator, if any, and `recoveryCodes` replace its
    /// recovery codes, in one transaction.
    /// - Returns: `false` when no such unconfirmed authenticator of this account is left.
    func confirmTOTP(
        id: SecondFactorID, userID: UserID, step: Int, recoveryCodes: [SecondFactor], at: Date
    ) async throws -> Bool
    /// Accepts a code of time step `step` for the confirmed authenticator `id`, if no code of this
    /// or a later step was accepted before.
    /// - Returns: `false` when the step is used (a replay) or the authenticator is gone.
    func useTOTP(id: SecondFactorID, step: Int, at: Date) async throws -> Bool
    /// Uses up the account's unused recovery code whose SHA-256 is `hash`.
    /// - Returns: `false` when there is none (wrong, or used already).
    func useRecoveryCode(userID: UserID, hash: String, at: Date) async throws -> Bool
    /// Replaces the account's recovery codes with `codes`.
    func replaceRecoveryCodes(userID: UserID, with codes: [SecondFactor]) async throws
    /// Removes every second factor of the account (turning them off, or an administrator's reset).
    func deleteSecondFactors(userID: UserID) async throws
}
