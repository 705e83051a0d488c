import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Receives the authorization redirect on `http://127.0.0.1:{port}{path}` (RFC 8252 §7.3): binds
/// the loopback address only, answers the browser with a short page, ignores other paths, and gives
/// up after a timeout. Plain POSIX sockets, so an app needs nothing beyond Foundation.
public final class LoopbackRedirectReceiver: Sendable {
    /// The bound port (an ephemeral one unless a port was asked for).
    public let port: Int
    /// The path the redirect must arrive on, such as `/callback`.
    public let path: String
    private let socket: Int32

    /// Binds `127.0.0.1:port` (0 for an ephemeral port).
    /// - Throws: ``ClientError/network(_:)`` when the address cannot be bound.
    public init(port: Int = 0, path: String = "/callback") throws {
        let fd = Self.makeSocket()
        guard fd >= 0 else { throw ClientError.network("cannot create a socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw ClientError.network("cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.socket = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.path = path.hasPrefix("/") ? path : "/" + path
    }

    deinit { close(socket) }

    /// The redirect URI to send in the authorization request.
    public var redirectURI: String { "http://127.0.0.1:\(port)\(path)" }

    /// Waits for one `GET {path}?…` and returns the full redirect URL it carried.
    /// - Throws: ``ClientError/timedOut`` when none arrives in time.
    public func waitForRedirect(timeout: Duration = .seconds(300)) async throws -> String {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let deadline = Date().addingTimeInterval(seconds)
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.acceptLoop(until: deadline) })
            }
        }
    }

    private func acceptLoop(until deadline: Date) throws -> String {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw ClientError.timedOut }
            var waiting = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, Int32(min(remaining, 1) * 1000))
            if ready <= 0 { continue }
            let connection = accept(socket, nil, nil)
            if connection < 0 { continue }
            defer { close(connection) }
            guard let target = Self.readRequestTarget(connection) else { continue }
            let requestPath = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
            if requestPath == path {
                Self.respond(connection, status: "200 OK", body: Self.donePage)
                return "http://127.0.0.1:\(port)" + target
            }
            Self.respond(connection, status: "404 Not Found", body: "<!doctype html><title>Not found</title><p>Not found.</p>")
        }
    }

    /// Reads the request head (at most 16 KiB, 5 s) and returns the target of a GET.
    private static func readRequestTarget(_ connection: Int32) -> String? {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(5)
        while received.count < 16_384, deadline.timeIntervalSinceNow > 0 {
            var waiting = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 1000) > 0 else { continue }
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[0..<count]
            if let head = String(validating: received, as: UTF8.self), head.contains("\r\n\r\n") || head.contains("\n\n") {
                let parts = head.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, parts[0] == "GET" else { return nil }
                return String(parts[1])
            }
        }
        return nil
    }

    private static func respond(_ connection: Int32, status: String, body: String) {
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n" + body
        _ = Array(response.utf8).withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
    }

    private static func makeSocket() -> Int32 {
        #if canImport(Glibc)
            Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
    }

    static let donePage = """
        <!doctype html><html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1"><title>Signed in</title></head>
        <body style="font-family: system-ui, sans-serif; text-align: center; padding: 3rem 1rem">
        <h1>You can close this window</h1><p>Return to the app to continue.</p></body></html>
        """
}
