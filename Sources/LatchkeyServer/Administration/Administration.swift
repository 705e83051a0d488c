import Foundation
import LatchkeyCore
import Logging

/// An operator's mistake in an admin command, said so a person can act on it.
public struct AdministrationError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What registering a client returns: the client and, for confidential ones, the secret, shown once.
public struct RegisteredClient: Sendable {
    public var client: Client
    /// The plain secret: stored only as a hash, so this is the one chance to see it.
    public var secret: String?
}

/// The operator's actions behind `latchkey clients|users|scopes` (docs/design.md §5).
public struct Administration: Sendable {
    public let store: any Store
    public let passwordHasher: any PasswordHasher
    public var now: @Sendable () -> Date
    /// Where the audit events of every change go (`client.registered`, `user.deleted`, …).
    public var logger: Logger

    public init(
        store: any Store, passwordHasher: any PasswordHasher, now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "latchkey.admin")
    ) {
        self.store = GuardedStore.wrap(store)
        self.passwordHasher = passwordHasher
        self.now = now
        self.logger = logger
    }

    private func event(_ name: String, _ metadata: Logger.Metadata) {
        logger.notice("\(name)", metadata: metadata.merging(["event": "\(name)"]) { a, _ in a })
    }

    /// Registers a client after checking its redirect URIs, scopes and links.
    /// - Parameters:
    ///   - ownerUsername: makes a personal app that only this user may authorize.
    ///   - allowImplicit: lets a `browser` client use the implicit grant.
    public func registerClient(
        type: ClientType, name: String, redirectURIs: [String], scopes: [String], logoURI: String? = nil,
        consentMarkdown: String? = nil, privacyPolicyURI: String? = nil, ownerUsername: String? = nil,
        allowImplicit: Bool = false
    ) async throws -> RegisteredClient {
        if allowImplicit, type != .browser {
            throw AdministrationError("--allow-implicit is only for browser clients; the others use the code flow.")
        }
        var ownerUserID: UserID?
        if let ownerUsername {
            guard type != .service else { throw AdministrationError("A service client acts for no user and has no --owner.") }
            guard let owner = try await store.user(username: Username(rawValue: ownerUsername)) else {
                throw AdministrationError("There is no user named \(ownerUsername) to own the client.")
            }
            ownerUserID = owner.id
        }
        let trimmedName = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmedName.isEmpty, trimmedName.count <= 100 else {
            throw AdministrationError("--name must be 1 to 100 characters.")
        }
        if type == .service, !redirectURIs.isEmpty {
            throw AdministrationError("A service client uses client credentials and has no redirect URIs.")
        }
        guard type == .service || !redirectURIs.isEmpty else {
            throw AdministrationError("A \(type.rawValue) client needs at least one --redirect-uri.")
        }
        for uri in redirectURIs {
            if let problem = RedirectURI.registrationProblem(uri, policy: type == .native ? .native : .web) {
                throw AdministrationError("Redirect URI \(uri): \(problem).")
            }
        }
        let catalogue = try await store.scopeCatalogue().map(\.name)
        let requested = scopes.isEmpty ? ["profile"] : scopes
        for scope in requested where !catalogue.contains(scope) {
            throw AdministrationError(
                "The scope \(scope) is not in the catalogue. Add it first: latchkey scopes add \(scope) --description \"…\"")
        }
        for (option, link) in [("--logo-uri", logoURI), ("--privacy-policy-uri", privacyPolicyURI)] {
            if let link, !(link.hasPrefix("https://") && URL(string: link)?.host != nil) {
                throw AdministrationError("\(option) must be an https URL.")
            }
        }
        let secret = type.isConfidential ? RandomToken.generate(.clientSecret) : nil
        // 16 alphanumerics: about 95 bits, never starting with "-" on a command line.
        let client = Client(
            id: ClientID(rawValue: RandomToken.alphanumeric(length: 16)), type: type, name: trimmedName,
            redirectURIs: redirectURIs,
            scopes: ScopeSet(requested), logoURI: logoURI, consentMarkdown: consentMarkdown,
            privacyPolicyURI: privacyPolicyURI, secretHash: secret.map(RandomToken.hash), ownerUserID: ownerUserID,
            allowImplicit: allowImplicit, createdAt: now())
        try await store.insertClient(client)
        event("client.registered", ["client_id": "\(client.id)", "type": "\(type.rawValue)"])
        return RegisteredClient(client: client, secret: secret)
    }

    /// Gives a confidential client a new secret, shown once; the old one stops working at once.
    public func rotateSecret(clientID: String) async throws -> String {
        guard let client = try await store.client(id: ClientID(rawValue: clientID)) else {
            throw AdministrationError("There is no client \(clientID).")
        }
        guard client.type.isConfidential else {
            throw AdministrationError("A \(client.type.rawValue) client is public and has no secret.")
        }
        let secret = RandomToken.generate(.clientSecret)
        guard try await store.setClientSecretHash(id: ClientID(rawValue: clientID), secretHash: RandomToken.hash(secret)) else {
            throw AdministrationError("There is no client \(clientID).")
        }
        event("client.secret_rotated", ["client_id": "\(clientID)"])
        return secret
    }

    /// Deletes a client with everything it was granted. - Returns: whether it existed.
    public func deleteClient(id: String) async throws -> Bool {
        guard try await store.deleteClient(id: ClientID(rawValue: id)) else { return false }
        event("client.deleted", ["client_id": "\(id)"])
        return true
    }

    /// Deletes a user with their sessions, consents and grants. - Returns: whether they existed.
    public func deleteUser(username: String) async throws -> Bool {
        guard let user = try await store.user(username: Username(rawValue: username)),
            try await store.deleteUser(username: Username(rawValue: username))
        else {
            return false
        }
        event("user.deleted", ["user_id": "\(user.id)"])
        return true
    }

    /// Creates a user with a bcrypt-hashed password.
    public func createUser(username: String, displayName: String?, password: String) async throws -> User {
        guard !username.isEmpty, username.count <= 64, !username.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw AdministrationError("A username is 1 to 64 characters without spaces.")
        }
        try Self.checkPassword(password)
        if try await store.user(username: Username(rawValue: username)) != nil {
            throw AdministrationError("A user named \(username) already exists.")
        }
        let user = User(
            id: UserID(rawValue: UUID().uuidString.lowercased()), username: Username(rawValue: username),
            displayName: displayName,
            passwordHash: try await passwordHasher.hash(password), createdAt: now())
        try await store.insertUser(user)
        event("user.created", ["user_id": "\(user.id)"])
        return user
    }

    /// Changes a password, signs the user out everywhere and ends every app's access: a password
    /// change often answers a suspected compromise (docs/threat-model.md T48).
    public func setPassword(username: String, password: String) async throws {
        try Self.checkPassword(password)
        guard
            try await store.setPasswordHash(
                username: Username(rawValue: username), passwordHash: try await passwordHasher.hash(password)),
            let user = try await store.user(username: Username(rawValue: username))
        else {
            throw AdministrationError("There is no user named \(username).")
        }
        let grants = try await store.activeGrants(userID: user.id, at: now())
        for grant in grants {
            try await store.revokeGrant(id: grant.id, at: now())
        }
        event("user.password_changed", ["user_id": "\(user.id)", "grants_revoked": "\(grants.count)"])
    }

    static func checkPassword(_ password: String) throws {
        guard password.count >= 8 else { throw AdministrationError("A password must be at least 8 characters.") }
        guard password.utf8.count <= 72 else {
            throw AdministrationError("A password must be at most 72 bytes (bcrypt reads no further).")
        }
    }

    /// Adds a scope to the catalogue, or changes its description.
    public func addScope(name: String, description: String) async throws {
        guard ScopeSet.isScopeToken(name) else {
            throw AdministrationError("A scope name is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3).")
        }
        guard !description.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw AdministrationError("--description must say what the scope lets an app do.")
        }
        try await store.saveScope(ScopeDefinition(name: name, description: description))
        event("scope.saved", ["scope": "\(name)"])
    }

    /// Removes a scope that no client is registered with.
    public func deleteScope(name: String) async throws {
        let users = try await store.clients().filter { $0.scopes.contains(name) }.map(\.id.rawValue)
        guard users.isEmpty else {
            throw AdministrationError("The scope \(name) is used by clients \(users.joined(separator: ", ")); delete them first.")
        }
        guard try await store.deleteScope(named: name) else { throw AdministrationError("There is no scope named \(name).") }
        event("scope.deleted", ["scope": "\(name)"])
    }
}

extension ScopeDefinition {
    /// The catalogue a fresh store starts with: `profile` and the data collections a fitness or photo app asks for.
    public static let defaultCatalogue: [ScopeDefinition] = [
        ScopeDefinition(name: "profile", description: "See your name and username"),
        ScopeDefinition(name: "activity", description: "See your activity and exercise"),
        ScopeDefinition(name: "heartrate", description: "See your heart rate"),
        ScopeDefinition(name: "location", description: "See your location data"),
        ScopeDefinition(name: "nutrition", description: "See your food and water logs"),
        ScopeDefinition(name: "settings", description: "See your account settings and devices"),
        ScopeDefinition(name: "sleep", description: "See your sleep"),
        ScopeDefinition(name: "social", description: "See your friends"),
        ScopeDefinition(name: "weight", description: "See your weight and body measurements"),
        ScopeDefinition(name: "photos", description: "See your photos"),
    ]
}
