import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// What the Activity page's filter form asks for.
struct ActivityFilters: Sendable {
    var days: Int
    var event: String?
    /// A username or a user id.
    var user: String?
    var client: String?

    init(query: FormParameters) {
        func text(_ name: String) -> String? {
            query[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        days = text("days").flatMap(Int.init).map { min(max($0, 1), 3_650) } ?? 7
        event = text("event")
        user = text("user")
        client = text("client")
    }

    /// The events the page suggests in its filter: every one the audit table keeps.
    static let eventNames = SecurityEvent.allCases.filter(\.isKept).map(\.rawValue)
}

/// `GET /admin/activity`: the audit events of the last days, filtered; `GET /admin/mail`: the
/// e-mail outbox (administrators only).
struct ConsoleActivityRoutes: Sendable {
    let routes: ConsoleRoutes
    static let limit = 200

    func register(on router: Router<LatchkeyRequestContext>) {
        router.get("/admin/activity") { request, _ in try await activity(request) }
        router.get("/admin/mail") { request, _ in try await mail(request) }
    }

    /// `GET /admin/mail`: where e-mail goes and the outbox (administrators only).
    func mail(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let server = routes.server
            let (counts, messages) = try await server.console.mailOutbox(limit: Self.limit)
            return routes.page(
                routes.console.mail(
                    delivery: server.configuration.mailDelivery, counts: counts, messages: messages, viewer: viewer))
        }
    }

    func activity(_ request: Request) async throws -> Response {
        try await routes.withViewer(request, .administration) { viewer in
            let server = routes.server
            let filters = ActivityFilters(query: (try? FormBody.query(request).get()) ?? FormParameters([]))
            // Events stored within the last second may still be waiting in memory.
            try? await server.flushAuditEvents()
            let users = try await server.console.allUsers()
            let userID = filters.user.map { wanted in users.first { $0.username.rawValue == wanted }?.id.rawValue ?? wanted }
            let events = try await server.console.activity(
                AuditQuery(
                    since: server.configuration.now().addingTimeInterval(-Double(filters.days) * 86_400), event: filters.event,
                    userID: userID, clientID: filters.client, limit: Self.limit))
            let usernames = Dictionary(users.map { ($0.id.rawValue, $0.username.rawValue) }) { first, _ in first }
            return routes.page(
                routes.console.activity(
                    events, filters: filters, limit: Self.limit,
                    retentionDays: Int(server.configuration.activityRetention / 86_400), usernames: usernames, viewer: viewer))
        }
    }
}
