import Foundation
import LatchkeyServer
import PostgresNIO

// Audit events for the Activity page.
extension PostgresStore {
    public func insertAuditEvents(_ events: [AuditEvent]) async throws {
        guard !events.isEmpty else { return }
        _ = try await transaction { connection, logger in
            for event in events {
                try await connection.query(
                    """
                    INSERT INTO audit_events (id, at, event, actor, user_id, client_id, details)
                    VALUES (\(event.id), \(event.at.timeIntervalSince1970), \(event.event), \(event.actor), \(event.userID),
                        \(event.clientID), \(event.detailsJSON))
                    """, logger: logger)
            }
            return true
        }
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        try await perform { client in
            // A filter left out matches every row: COALESCE(NULL, column) = column.
            try await client.query(
                """
                SELECT id, at, event, actor, user_id, client_id, details FROM audit_events
                WHERE at >= \(query.since.timeIntervalSince1970) AND event = COALESCE(\(query.event), event)
                    AND COALESCE(user_id, '') = COALESCE(\(query.userID), user_id, '')
                    AND COALESCE(client_id, '') = COALESCE(\(query.clientID), client_id, '')
                ORDER BY at DESC, id DESC LIMIT \(query.limit)
                """
            ).map { row in
                AuditEvent(
                    id: try row.string("id"), at: try row.date("at"), event: try row.string("event"),
                    actor: try row.optionalString("actor"), userID: try row.optionalString("user_id"),
                    clientID: try row.optionalString("client_id"),
                    details: AuditEvent.details(fromJSON: try row.string("details")))
            }
        }
    }
}
