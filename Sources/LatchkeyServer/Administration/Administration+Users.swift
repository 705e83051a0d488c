import Foundation
import LatchkeyCore

extension Administration {
    /// Deletes a user with their sessions, consents and grants. - Returns: whether they existed.
    public func deleteUser(username: String) async throws -> Bool {
        guard let user = try await store.user(username: Username(rawValue: username)),
            try await store.deleteUser(username: Username(rawValue: username))
        else {
            return false
        }
        await event(.userDeleted, ["user_id": "\(user.id)"])
        return true
    }

    /// Creates a user with a bcrypt-hashed password and the claims apps may be given (`email`).
    public func createUser(
        username: String, displayName: String?, password: String, role: UserRole = .none, email: String? = nil,
        emailVerified: Bool = false
    ) async throws -> User {
        try Self.checkEmail(email)
        guard !username.isEmpty, username.count <= 64, !username.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw AdministrationError("A username is 1 to 64 characters without spaces.")
        }
        try passwordPolicy.check(password, username: username, email: email)
        // Taken in any case (ASCII letters), as at sign-up: sign-in counts failures per lower-cased
        // name and a right password clears that count, so `Alice` beside `alice` could clear it.
        if try await store.usernameTaken(ignoringCase: username) {
            throw AdministrationError("A user named \(username) (in some case) already exists.")
        }
        let user = User(
            id: UserID(rawValue: UUID().uuidString.lowercased()), username: Username(rawValue: username),
            displayName: displayName,
            passwordHash: try await passwordHasher.hash(password), role: role, email: email,
            emailVerified: email != nil && emailVerified, createdAt: now())
        try await store.insertUser(user)
        await event(.userCreated, ["user_id": "\(user.id)", "role": "\(role.rawValue)"])
        return user
    }

    /// Changes what apps granted `profile` or `email` are told: the display name, the email
    /// address and whether it is verified; a `nil` argument keeps the current value. `updated_at` moves.
    public func setProfile(username: String, displayName: String?, email: String?, emailVerified: Bool?) async throws -> User {
        var user = try await existingUser(username)
        try Self.checkEmail(email)
        if let displayName { user.displayName = displayName.isEmpty ? nil : displayName }
        if let email {
            // A new address is unverified unless the caller says otherwise.
            if email != user.email { user.emailVerified = false }
            user.email = email.isEmpty ? nil : email
        }
        if let emailVerified { user.emailVerified = emailVerified }
        if user.email == nil { user.emailVerified = false }
        guard
            try await store.setUserProfile(
                id: user.id, displayName: user.displayName, email: user.email, emailVerified: user.emailVerified, at: now())
        else { throw noSuchUser(username) }
        await event(.userUpdated, ["user_id": "\(user.id)", "fields": "profile"])
        return user
    }

    /// An address as `local@domain`, no spaces, at most 254 characters (RFC 5321 §4.5.3.1.3); empty clears it.
    static func checkEmail(_ email: String?) throws {
        guard let email, !email.isEmpty else { return }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !email.contains(where: { $0.isWhitespace || $0.isNewline || $0 == "\u{0}" })
        else { throw AdministrationError("The email address \(email) is not of the form name@example.com.", field: "email") }
    }

    /// Changes a password, signs the user out everywhere and ends every app's access: a password
    /// change often answers a suspected compromise (docs/threat-model.md T48).
    public func setPassword(username: String, password: String) async throws {
        let current = try await existingUser(username)
        try passwordPolicy.check(password, username: username, email: current.email)
        guard
            try await store.setPasswordHash(
                username: Username(rawValue: username), passwordHash: try await passwordHasher.hash(password)),
            let user = try await store.user(username: Username(rawValue: username))
        else {
            throw AdministrationError("There is no user named \(username).")
        }
        // The store revoked every grant, code and approved device request in the same transaction.
        await event(.userPasswordChanged, ["user_id": "\(user.id)"])
    }

    /// Makes a user an administrator, or an ordinary user again.
    public func setRole(username: String, role: UserRole) async throws {
        let user = try await existingUser(username)
        guard try await store.setUserRole(id: user.id, role: role) else { throw noSuchUser(username) }
        await event(.userRoleChanged, ["user_id": "\(user.id)", "role": "\(role.rawValue)"])
    }

    /// Disables an account — it cannot sign in, its sessions end and everything it granted is
    /// revoked at once — or enables it again.
    public func setDisabled(username: String, _ disabled: Bool) async throws {
        let user = try await existingUser(username)
        guard try await store.setUserDisabled(id: user.id, at: disabled ? now() : nil) else { throw noSuchUser(username) }
        await event(disabled ? .userDisabled : .userEnabled, ["user_id": "\(user.id)"])
    }

    /// Removes every second factor of the account, passkeys included (its owner lost them): it signs in with its
    /// password alone until it sets one up again, which it is asked to do at once where a second
    /// factor is required. Never by e-mail alone: only an administrator does this.
    public func resetSecondFactors(username: String) async throws {
        let user = try await existingUser(username)
        try await store.deleteSecondFactors(userID: user.id)
        try await store.deletePasskeys(userID: user.id)
        await event(.userSecondFactorsReset, ["user_id": "\(user.id)"])
    }

    /// Requires the account to sign in with a second factor, whatever `require-second-factor`
    /// says, or stops requiring it.
    public func setSecondFactorRequired(username: String, _ required: Bool) async throws {
        let user = try await existingUser(username)
        guard try await store.setSecondFactorRequired(id: user.id, required) else { throw noSuchUser(username) }
        await event(.userSecondFactorRequired, ["user_id": "\(user.id)", "required": "\(required)"])
    }

    func existingUser(_ username: String) async throws -> User {
        guard let user = try await store.user(username: Username(rawValue: username)) else { throw noSuchUser(username) }
        return user
    }

    func noSuchUser(_ username: String) -> AdministrationError {
        AdministrationError("There is no user named \(username).")
    }
}

extension Administration {
    /// Ends everything the user granted one app, as the user's own "Disconnect" does.
    public func revokeAuthorization(username: String, clientID: String) async throws {
        let user = try await existingUser(username)
        try await store.revokeAuthorization(userID: user.id, clientID: ClientID(rawValue: clientID), at: now())
        await event(.grantRevokedByAdmin, ["user_id": "\(user.id)", "client_id": "\(clientID)"])
    }

    /// Ends one of the user's browser sessions, named by its stored hash (another user's is left alone).
    public func endSession(username: String, idHash: String) async throws {
        let user = try await existingUser(username)
        guard try await store.sessions(userID: user.id).contains(where: { $0.idHash.rawValue == idHash }) else { return }
        try await store.signOutSession(idHash: SessionIDHash(rawValue: idHash), at: now())
        await event(.userSessionEnded, ["user_id": "\(user.id)"])
    }

    /// Signs the user out of every browser.
    public func endSessions(username: String) async throws {
        let user = try await existingUser(username)
        try await store.deleteSessions(userID: user.id)
        await event(.userSessionsEnded, ["user_id": "\(user.id)"])
    }
}
