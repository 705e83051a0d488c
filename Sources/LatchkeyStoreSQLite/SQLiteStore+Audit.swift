import Foundation
import GRDB
import LatchkeyServer

// Audit events for the Activity page.
extension SQLiteStore {
    public func insertAuditEvents(_ events: [AuditEvent]) async throws {
        guard !events.isEmpty else { return }
        try await write { db in
            for event in events {
                try db.run(
                    sql: """
                        INSERT INTO audit_events (id, at, event, actor, user_id, client_id, details)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        event.id, event.at.storeValue, event.event, event.actor, event.userID, event.clientID, event.detailsJSON,
                    ])
            }
        }
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        try await read { db in
            // A filter left out matches every row: COALESCE(NULL, column) = column.
            try db.rows(
                sql: """
                    SELECT id, at, event, actor, user_id, client_id, details FROM audit_events
                    WHERE at >= ? AND event = COALESCE(?, event)
                        AND COALESCE(user_id, '') = COALESCE(?, user_id, '') AND COALESCE(client_id, '') = COALESCE(?, client_id, '')
                    ORDER BY at DESC, id DESC LIMIT ?
                    """,
                arguments: [query.since.storeValue, query.event, query.userID, query.clientID, query.limit]
            ).map { row in
                AuditEvent(
                    id: row[0], at: Date(storeValue: row[1]), event: row[2], actor: row[3], userID: row[4], clientID: row[5],
                    details: AuditEvent.details(fromJSON: row[6]))
            }
        }
    }
}
