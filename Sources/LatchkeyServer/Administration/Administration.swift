import Foundation
import LatchkeyCore
import Logging

/// An operator's mistake in an admin command, said so a person can act on it.
public struct AdministrationError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// The setting at fault, by its admin API member name (`client_name`, `redirect_uris`, …),
    /// so that a form can mark the field and the API can name it.
    public var field: String?
    public init(_ description: String, field: String? = nil) {
        self.description = description
        self.field = field
    }
}

/// The operator's actions behind `latchkey clients|users|scopes` (docs/design.md §5) and the
/// admin console. Clients are in `Administration+Clients.swift`, users in `+Users.swift`.
public struct Administration: Sendable {
    public let store: any Store
    public let passwordHasher: any PasswordHasher
    /// What every password set here must be (`password-min-length`).
    public var passwordPolicy: PasswordPolicy
    public var now: @Sendable () -> Date
    /// Whether native apps may register `http://localhost` redirect URIs (`localhost-redirect-uris`).
    public var acceptsLocalhostRedirects = true
    /// Where the audit events of every change go (`client.registered`, `user.deleted`, …).
    public var logger: Logger
    /// Who acts, named in every audit event as `actor`: `cli` for the command line, else the
    /// signed-in administrator's user id (``acting(as:)``).
    public private(set) var actor = "cli"

    public init(
        store: any Store, passwordHasher: any PasswordHasher, passwordPolicy: PasswordPolicy = PasswordPolicy(),
        now: @escaping @Sendable () -> Date = { Date() }, logger: Logger = Logger(label: "latchkey.admin")
    ) {
        self.store = store
        self.passwordHasher = passwordHasher
        self.passwordPolicy = passwordPolicy
        self.now = now
        self.logger = logger
    }

    /// The same administration acting for `user`, whose id the audit events then name.
    public func acting(as user: User) -> Administration {
        var copy = self
        copy.actor = user.id.rawValue
        return copy
    }

    /// The same administration acting for an admin API client: `actor` is `client:ID`.
    public func acting(as client: Client) -> Administration {
        var copy = self
        copy.actor = "client:" + client.id.rawValue
        return copy
    }

    /// The same administration acting for a client registering itself from `address` (RFC 7591):
    /// `actor` is `registration:ADDRESS`.
    public func acting(asRegistrantFrom address: String) -> Administration {
        var copy = self
        copy.actor = "registration:" + address
        return copy
    }

    /// Logs the event and stores it for the Activity page at once: administrative changes are
    /// rare, and each must be kept. A store that cannot take it is logged, and the change stands.
    func event(_ event: SecurityEvent, _ metadata: Logger.Metadata) async {
        let fields = metadata.merging(["actor": "\(actor)"]) { a, _ in a }
        logger.notice("\(event)", metadata: fields.merging(["event": "\(event)"]) { a, _ in a })
        EventMetrics.record(event, fields)
        do {
            try await store.insertAuditEvents([AuditTrail.event(event, fields, at: now())])
        } catch {
            logger.error("audit event not stored", metadata: ["event": "\(event)", "error": "\(error)"])
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
        await event(.scopeSaved, ["scope": "\(name)"])
    }

    /// Removes a scope that no client is registered with.
    public func deleteScope(name: String) async throws {
        let users = try await store.clients().filter { $0.scopes.contains(name) }.map(\.id.rawValue)
        guard users.isEmpty else {
            throw AdministrationError("The scope \(name) is used by clients \(users.joined(separator: ", ")); delete them first.")
        }
        guard try await store.deleteScope(named: name) else { throw AdministrationError("There is no scope named \(name).") }
        await event(.scopeDeleted, ["scope": "\(name)"])
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
