import Foundation
import LatchkeyCore

/// An app as the console lists it.
public struct ConsoleApp: Sendable {
    public var client: Client
    /// The owner's username, for a personal app.
    public var ownerUsername: String?
    /// Grants that still hold an active token.
    public var activeGrants: Int
}

/// One user as the console's user page shows them.
public struct ConsoleUserDetail: Sendable {
    public var user: User
    /// The apps the user has connected, with what each may do.
    public var apps: [ConnectedApp]
    /// The user's browser sessions, newest first.
    public var sessions: [BrowserSession]
    /// The user's second factors, and whether one is required.
    public var secondFactors: SecondFactorSummary
}

extension Console {
    /// The apps `viewer` may manage, oldest first.
    public func consoleApps(for viewer: ConsoleUser) async throws -> [ConsoleApp] {
        let counts = try await grants.activeGrantCounts(at: now)
        let usernames = Dictionary(try await users.users().map { ($0.id, $0.username.rawValue) }) { first, _ in first }
        return try await clients.clients().filter(viewer.mayManage).map { client in
            ConsoleApp(
                client: client, ownerUsername: client.ownerUserID.flatMap { usernames[$0] },
                activeGrants: counts[client.id] ?? 0)
        }
    }

    /// One app, or `nil` when it does not exist or `viewer` may not manage it.
    public func consoleApp(id: String, for viewer: ConsoleUser) async throws -> ConsoleApp? {
        guard let client = try await clients.client(id: ClientID(rawValue: id)), viewer.mayManage(client) else { return nil }
        var ownerUsername: String?
        if let owner = client.ownerUserID { ownerUsername = try await users.user(id: owner)?.username.rawValue }
        let grants = try await grants.activeGrantCounts(at: now)[client.id] ?? 0
        return ConsoleApp(client: client, ownerUsername: ownerUsername, activeGrants: grants)
    }

    /// Registers an app from the console. A user who is not an administrator (self-service) can
    /// register only a personal app of their own, never a service client or a first-party app (which
    /// would skip other users' consent).
    public func consoleRegister(_ settings: ClientSettings, by viewer: ConsoleUser) async throws -> RegisteredClient {
        try await administration.acting(as: viewer.user).registerClient(try limited(settings, by: viewer))
    }

    /// Changes an app from the console, with the same limits as ``consoleRegister(_:by:)``.
    /// Grants the form has no box for (the JWT bearer grant) are kept as they were.
    public func consoleUpdate(id: String, _ settings: ClientSettings, by viewer: ConsoleUser) async throws -> Client {
        guard let app = try await consoleApp(id: id, for: viewer) else { throw AdministrationError("There is no app \(id).") }
        var settings = settings
        let onTheForm =
            Set([GrantTypes.implicit, GrantTypes.deviceCode, GrantTypes.tokenExchange])
            .union(GrantRegistry.standard.defaultGrantTypes(for: app.client.type))
        settings.grantTypes = GrantTypes.ordered(settings.grantTypes + app.client.grantTypes.filter { !onTheForm.contains($0) })
        return try await administration.acting(as: viewer.user).updateClient(id: id, try limited(settings, by: viewer))
    }

    private func limited(_ settings: ClientSettings, by viewer: ConsoleUser) throws -> ClientSettings {
        guard !viewer.isAdmin else { return settings }
        guard settings.type != .service else {
            throw AdministrationError("Only administrators register service clients.", field: "application_type")
        }
        guard !settings.firstParty else {
            throw AdministrationError("Only administrators mark an app first-party.", field: "first_party")
        }
        var own = settings
        own.ownerUsername = viewer.user.username.rawValue
        return own
    }

    /// Users whose username or display name contains `query` (any case), or all of them.
    public func consoleUsers(matching query: String?) async throws -> [User] {
        let users = try await users.users()
        guard let query = query?.trimmingCharacters(in: .whitespaces), !query.isEmpty else { return users }
        return users.filter {
            $0.username.rawValue.localizedCaseInsensitiveContains(query)
                || ($0.displayName?.localizedCaseInsensitiveContains(query) ?? false)
        }
    }

    public func consoleUserDetail(username: String) async throws -> ConsoleUserDetail? {
        guard let user = try await users.user(username: Username(rawValue: username)) else { return nil }
        return ConsoleUserDetail(
            user: user, apps: try await account.connectedApps(userID: user.id),
            sessions: try await sessionStore.sessions(userID: user.id), secondFactors: try await secondFactors.summary(of: user))
    }
}

extension Console {
    /// Every registered resource, for the console's Resources page.
    public func resources() async throws -> [ProtectedResource] { try await catalogue.resources() }

    /// The registered resource at `uri`, if any.
    public func resource(uri: String) async throws -> ProtectedResource? {
        try await catalogue.resources(uris: ResourceSet([uri])).first
    }

    /// The user with `id`, if any.
    public func user(id: String) async throws -> User? { try await users.user(id: UserID(rawValue: id)) }

    /// Every user, for the Activity page's names.
    public func allUsers() async throws -> [User] { try await users.users() }

    /// The stored audit events `query` selects, for the Activity page.
    public func activity(_ query: AuditQuery) async throws -> [AuditEvent] { try await auditEvents.auditEvents(query) }

    /// The outbox's counts and its newest `limit` messages, for the E-mail page.
    public func mailOutbox(limit: Int) async throws -> (counts: OutboxCounts, messages: [OutboxMessage]) {
        (try await mail.mailOutboxCounts(), try await mail.recentMail(limit: limit))
    }
}
