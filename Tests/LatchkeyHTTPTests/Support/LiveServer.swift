import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyHTTP
import LatchkeyServer
import LatchkeyTestSupport
import Logging
import ServiceLifecycle

/// The real HTTP server on a loopback port chosen by the OS, stopped gracefully by ``stop()``.
final class LiveServer: Sendable {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.group = group
        self.task = task
    }

    static func start(_ server: AuthorizationServer, port: Int = 0) async throws -> LiveServer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try LatchkeyApplication.make(server: server, host: "127.0.0.1", port: port) { continuation.yield($0) }
        var logger = Logger(label: "live-server")
        logger.logLevel = .warning
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return LiveServer(port: port, group: group, task: task)
    }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}

/// Runs `body` against a fresh fixture served on loopback, with a browser, and stops both after.
func withLiveServer(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (Fixture, Browser) async throws -> Void
) async throws {
    let fixture = try await Fixture.make(configure: configure)
    let live = try await LiveServer.start(fixture.server)
    let browser = Browser(port: live.port)
    do {
        try await body(fixture, browser)
    } catch {
        try? await browser.close()
        try? await live.stop()
        throw error
    }
    try await browser.close()
    try await live.stop()
}

/// A small browser for tests: a cookie jar, no redirect following, form fields read from HTML.
actor Browser {
    struct Page: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: String
        var location: String? { headers[.location] }

        /// The value of a form input named `name`.
        func field(_ name: String) -> String? {
            guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
            let rest = body[range.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }

        /// Decodes a JSON body.
        func json<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: Data(body.utf8)) }
        var jsonObject: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    let client: TestClient
    /// The server's port, for a second browser with cookies of its own.
    let port: Int
    private(set) var cookies: [String: String] = [:]

    init(port: Int) {
        self.port = port
        client = TestClient(host: "127.0.0.1", port: port)
        client.connect()
    }

    func close() async throws { try await client.shutdown() }

    /// Takes `cookies` as its own: the same browser session, on another instance.
    func adopt(_ cookies: [String: String]) { self.cookies = cookies }

    func get(_ path: String, headers: HTTPFields = [:]) async throws -> Page {
        try await send(TestClient.Request(path, method: .get, headers: headers))
    }

    func post(_ path: String, form: [(String, String)], headers: HTTPFields = [:]) async throws -> Page {
        let body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await post(path, body: body, headers: headers)
    }

    func post(
        _ path: String, body: String, contentType: String = "application/x-www-form-urlencoded", headers: HTTPFields = [:]
    ) async throws -> Page {
        var all = headers
        all[.contentType] = contentType
        return try await send(TestClient.Request(path, method: .post, headers: all, body: ByteBuffer(string: body)))
    }

    /// Any method, with an optional JSON body (the admin API).
    func send(_ method: HTTPRequest.Method, _ path: String, json: String? = nil, headers: HTTPFields = [:]) async throws
        -> Page
    {
        var all = headers
        if json != nil { all[.contentType] = "application/json" }
        return try await send(
            TestClient.Request(path, method: method, headers: all, body: json.map { ByteBuffer(string: $0) }))
    }

    func postRaw(_ path: String, bytes: [UInt8]) async throws -> Page {
        try await send(
            TestClient.Request(
                path, method: .post, headers: [.contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(bytes: bytes))
        )
    }

    private func send(_ request: TestClient.Request) async throws -> Page {
        var request = request
        if !cookies.isEmpty {
            request.head.headerFields[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
        }
        let response = try await client.execute(request)
        for field in response.headers where field.name == .setCookie {
            let pair = field.value.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2 { cookies[String(pair[0])] = String(pair[1]) }
        }
        let body = response.body.map { String(buffer: $0) } ?? ""
        return Page(status: response.status, headers: response.headers, body: body)
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
