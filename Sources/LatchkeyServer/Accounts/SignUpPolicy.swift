import Foundation

/// Who may create an account at `/signup` (`--sign-up`), and what a new account must prove.
public struct SignUpPolicy: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// No sign-up: `/signup` answers 404 and administrators create every account (the default).
        case off
        /// Anyone may create an account.
        case open
        /// Only someone holding an invitation an administrator sent (`latchkey users invite`).
        case invite
    }

    public var mode: Mode = .off
    /// The e-mail domains whose addresses may sign up (`--sign-up-domain`), lower case; empty, any.
    /// An invitation is not checked against it: the administrator chose the address.
    public var emailDomains: [String] = []
    /// Whether an account made at `/signup` signs in to apps only once its address is verified
    /// (`--sign-up-email-verification required`, the default). An invited account's address is
    /// verified by the invitation.
    public var requiresVerifiedEmail = true
    /// Sign-ups allowed from one client address block in an hour.
    public var signUpsPerAddress = 10

    public init() {}

    /// Whether `email`'s domain may sign up.
    public func allows(email: String) -> Bool {
        guard !emailDomains.isEmpty else { return true }
        guard let at = email.lastIndex(of: "@") else { return false }
        return emailDomains.contains(email[email.index(after: at)...].lowercased())
    }
}
