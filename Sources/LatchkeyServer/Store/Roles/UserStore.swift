import Foundation
import LatchkeyCore

/// Resource owners: the people who sign in.
public protocol UserStore: Sendable {
    /// - Throws: ``StoreError/conflict(_:)`` when the username is taken.
    func insertUser(_ user: User) async throws
    func user(id: UserID) async throws -> User?
    func user(username: Username) async throws -> User?
    func users() async throws -> [User]
    /// The users whose e-mail address is `email`, compared without regard to case (addresses are
    /// not unique: an administrator may give two accounts one address), oldest first. SQLite folds
    /// ASCII letters only, PostgreSQL every letter: the addresses agree on both only while their
    /// letters are ASCII, which the feature that looks accounts up by address must see to.
    func users(email: String) async throws -> [User]
    /// Whether a user's name equals `username` ignoring the case of ASCII letters (what sign-up may
    /// choose from; SQLite's `lower` folds ASCII only).
    func usernameTaken(ignoringCase username: String) async throws -> Bool
    /// Deletes the user with their sessions, consents, grants, codes, tokens and e-mailed links.
    func deleteUser(username: Username) async throws -> Bool
    /// Sets the password hash and, in the same transaction, ends the user's browser sessions and
    /// everything the user granted (``AccessRevocation``): a password change often answers a
    /// suspected compromise.
    func setPasswordHash(username: Username, passwordHash: String) async throws -> Bool
    /// - Returns: whether the user exists.
    func setUserRole(id: UserID, role: UserRole) async throws -> Bool
    /// Sets the claims apps may be given (`name`, `email`, `email_verified`) and `updated_at`.
    /// - Returns: `false` when there is no such user.
    func setUserProfile(id: UserID, displayName: String?, email: String?, emailVerified: Bool, at: Date) async throws
        -> Bool
    /// Disables the account (`disabledAt` set) in one step with ending its browser sessions,
    /// deleting its unredeemed codes and revoking every grant and token it holds, so nothing it
    /// was given keeps working; or enables it again (`nil`), which brings none of that back.
    /// - Returns: whether the user exists.
    func setUserDisabled(id: UserID, at disabledAt: Date?) async throws -> Bool
    /// Requires the user to sign in with a second factor, or stops requiring it (the server's
    /// `require-second-factor` still applies).
    /// - Returns: whether the user exists.
    func setSecondFactorRequired(id: UserID, _ required: Bool) async throws -> Bool
}
