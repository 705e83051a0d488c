import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyServer
import Testing

@testable import LatchkeyHTTP

/// The one middleware around every route, without a socket: each way a request can end carries
/// its `X-Request-Id`, and the routes' log lines see the same id.
@Suite("The request middleware: ids, 405, 503 and thrown errors")
struct RequestMiddlewareTests {
    static let requestID = HTTPField.Name("X-Request-Id")!

    /// A router with only the middleware and routes that end each way, at paths `RouteTable` knows.
    static func application() -> some ApplicationProtocol {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: RequestMiddleware(proxies: TrustedProxies.none, accessLog: nil))
        // Answers the id that log lines written in the route would carry.
        router.post("/oauth2/token") { _, _ in RequestLog.id ?? "none" }
        router.post("/oauth2/introspect") { _, _ -> String in throw StoreError.unavailable("database is locked") }
        router.get("/login") { _, _ -> String in throw StoreError.unavailable("database is locked") }
        router.post("/oauth2/revoke") { _, _ -> String in throw HTTPError(.contentTooLarge) }
        return Application(router: router)
    }

    @Test("A route's log lines carry the id its response sends")
    func idReachesTheRoute() async throws {
        try await Self.application().test(.router) { client in
            let response = try await client.execute(uri: "/oauth2/token", method: .post)
            let id = try #require(response.headers[Self.requestID])
            #expect(id.utf8.count == 32)
            #expect(String(buffer: response.body) == id)
        }
    }

    @Test("A known path asked with another method is 405 with Allow; an unknown path stays 404")
    func methodNotAllowed() async throws {
        try await Self.application().test(.router) { client in
            let wrongMethod = try await client.execute(uri: "/oauth2/token", method: .get)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "POST")
            #expect(String(buffer: wrongMethod.body).contains(#""error":"invalid_request""#))
            #expect(wrongMethod.headers[Self.requestID] != nil)
            let unknown = try await client.execute(uri: "/no-such-page", method: .get)
            #expect(unknown.status == .notFound)
            #expect(unknown.headers[Self.requestID] != nil)
        }
    }

    @Test("A store failure is 503 temporarily_unavailable, an HTML page with Retry-After on pages (I5)")
    func storeFailure() async throws {
        try await Self.application().test(.router) { client in
            let machine = try await client.execute(uri: "/oauth2/introspect", method: .post)
            #expect(machine.status == .serviceUnavailable)
            #expect(machine.headers[.retryAfter] == "5")
            #expect(String(buffer: machine.body).contains(#""error":"temporarily_unavailable""#))
            #expect(!String(buffer: machine.body).contains("database is locked"))
            #expect(machine.headers[Self.requestID] != nil)
            let page = try await client.execute(uri: "/login", method: .get)
            #expect(page.status == .serviceUnavailable)
            #expect(page.headers[.retryAfter] == "5")
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(page.headers[Self.requestID] != nil)
        }
    }

    @Test("Another thrown HTTP error keeps its status and gains the id")
    func thrownError() async throws {
        try await Self.application().test(.router) { client in
            let response = try await client.execute(uri: "/oauth2/revoke", method: .post)
            #expect(response.status == .contentTooLarge)
            #expect(response.headers[Self.requestID] != nil)
        }
    }
}
