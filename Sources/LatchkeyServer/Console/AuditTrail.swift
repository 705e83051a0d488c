import Foundation
import LatchkeyCore
import Logging
import Synchronization

/// Where the server's audit events wait to be stored for the Activity page. The token and sign-in
/// paths only append here; a background task stores the waiting events every second or so, in one
/// transaction (``flush(to:)``), so no request waits for that write. Events still waiting when the
/// process dies are lost from the Activity page, not from the log, which has every event.
///
/// Events that are not ``SecurityEvent/isKept`` (`token.issued`) are logged but not kept here.
public final class AuditTrail: Sendable {
    private let waiting = Mutex<[AuditEvent]>([])
    /// Beyond this many waiting events (a store that does not answer) the oldest are dropped.
    static let capacity = 10_000

    public init() {}

    /// Records `event` with the fields of its log line.
    func record(_ event: SecurityEvent, _ metadata: Logger.Metadata, at: Date) {
        guard event.isKept else { return }
        let event = Self.event(event, metadata, at: at)
        waiting.withLock { events in
            if events.count >= Self.capacity { events.removeFirst(events.count - Self.capacity + 1) }
            events.append(event)
        }
    }

    /// Stores what is waiting. On failure the events wait for the next flush.
    public func flush(to store: any AuditStore) async throws {
        let events = waiting.withLock { events in
            defer { events = [] }
            return events
        }
        guard !events.isEmpty else { return }
        do {
            try await store.insertAuditEvents(events)
        } catch {
            // Back in front of what arrived meanwhile, the oldest dropped beyond the capacity.
            waiting.withLock { $0.insert(contentsOf: events.suffix(max(0, Self.capacity - $0.count)), at: 0) }
            throw error
        }
    }

    /// An event from a log line's fields: `actor`, `user_id` and `client_id` get columns, the rest
    /// goes to `details`.
    static func event(_ event: SecurityEvent, _ metadata: Logger.Metadata, at: Date) -> AuditEvent {
        var details: [String: String] = [:]
        for (key, value) in metadata where !["event", "actor", "user_id", "client_id"].contains(key) {
            details[key] = "\(value)"
        }
        func text(_ key: String) -> String? { metadata[key].map { "\($0)" }.flatMap { $0.isEmpty ? nil : $0 } }
        return AuditEvent(
            id: TimeOrderedID.make(at: at), at: at, event: event.rawValue, actor: text("actor"), userID: text("user_id"),
            clientID: text("client_id"), details: details)
    }
}
