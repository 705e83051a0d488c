import Foundation
import LatchkeyCore

/// One audit event as the Activity page shows it (the same event also goes to the log).
public struct AuditEvent: Sendable, Equatable {
    /// Time-ordered, so new events append to the table's index.
    public var id: String
    public var at: Date
    /// `login.succeeded`, `client.registered`, …
    public var event: String
    /// Who acted: `cli`, an administrator's user id, or `client:ID` for the admin API.
    public var actor: String?
    public var userID: String?
    public var clientID: String?
    /// The event's other fields (never a secret: the events carry none).
    public var details: [String: String]

    public init(
        id: String, at: Date, event: String, actor: String?, userID: String?, clientID: String?, details: [String: String]
    ) {
        self.id = id
        self.at = at
        self.event = event
        self.actor = actor
        self.userID = userID
        self.clientID = clientID
        self.details = details
    }
}

/// Which audit events to read: since a time, optionally one event name, user or client.
public struct AuditQuery: Sendable, Equatable {
    public var since: Date
    public var event: String?
    public var userID: String?
    public var clientID: String?
    /// At most this many, newest first.
    public var limit: Int

    public init(since: Date, event: String? = nil, userID: String? = nil, clientID: String? = nil, limit: Int = 200) {
        self.since = since
        self.event = event
        self.userID = userID
        self.clientID = clientID
        self.limit = limit
    }
}

/// The audit events kept for the admin console's Activity page. Housekeeping deletes them after
/// the retention period.
public protocol AuditStore: Sendable {
    /// Stores the events in one transaction.
    func insertAuditEvents(_ events: [AuditEvent]) async throws
    /// The events that match, newest first.
    func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent]
}

extension AuditEvent {
    /// `details` as one JSON object with sorted keys, as the stores keep it.
    public var detailsJSON: String {
        "{"
            + details.sorted { $0.key < $1.key }.map { JSONText.quote($0.key) + ":" + JSONText.quote($0.value) }
            .joined(separator: ",") + "}"
    }

    /// Reads `details` back from the stores' JSON text.
    public static func details(fromJSON text: String) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}
