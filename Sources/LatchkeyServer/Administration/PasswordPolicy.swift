import Foundation

/// What a new password must be (`password-min-length`): long enough, at most what bcrypt reads,
/// not the account's own name or e-mail address, and not one of the passwords people use most
/// (NIST SP 800-63B §3.1.1.2 asks for all four). Every way a password is set goes through it:
/// the CLI, the console, the admin API.
public struct PasswordPolicy: Sendable {
    /// Characters, at least 8 (NIST's floor).
    public var minimumLength: Int
    /// bcrypt reads no further.
    public static let maximumBytes = 72

    public init(minimumLength: Int = 8) {
        self.minimumLength = max(8, minimumLength)
    }

    /// Throws an ``AdministrationError`` for the `password` field saying what is wrong.
    public func check(_ password: String, username: String?, email: String?) throws {
        guard password.count >= minimumLength else {
            throw AdministrationError("A password must be at least \(minimumLength) characters.", field: "password")
        }
        guard password.utf8.count <= Self.maximumBytes else {
            throw AdministrationError(
                "A password must be at most \(Self.maximumBytes) bytes (bcrypt reads no further).", field: "password")
        }
        if Self.isOwnName(password, username: username, email: email) {
            throw AdministrationError(
                "A password must not be the account's username or e-mail address.", field: "password")
        }
        if Self.commonPasswords.contains(password.lowercased()) {
            throw AdministrationError(
                "This password is among the most used ones, which are tried first: choose another.", field: "password")
        }
    }

    /// Whether the password is the username, the e-mail address or its part before `@`, in any
    /// case and with up to six digits or punctuation marks after it (`Alice2024!` for `alice`).
    static func isOwnName(_ password: String, username: String?, email: String?) -> Bool {
        let lowered = password.lowercased()
        let suffix = lowered.reversed().prefix { $0.isNumber || $0.isPunctuation || $0.isSymbol }.count
        let stem = suffix <= 6 ? String(lowered.dropLast(suffix)) : lowered
        var names = [username, email, email.map { String($0.prefix { $0 != "@" }) }].compactMap { $0?.lowercased() }
        names.removeAll { $0.isEmpty }
        return names.contains { $0 == password.lowercased() || $0 == stem }
    }

    /// The 11,611 passwords of eight characters or more among the 30,000 most used in published
    /// breaches, lower-cased, one per line (`Resources/common-passwords.txt`, compiled into the
    /// binary). A password is compared lower-cased.
    static let commonPasswords: Set<String> = {
        let text = String(decoding: PackageResources.common_passwords_txt, as: UTF8.self)
        return Set(text.split(separator: "\n").map(String.init))
    }()
}
