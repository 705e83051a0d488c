import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyServer
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Fetches client metadata documents with the defences against server-side request forgery:
///
/// - `https` only, and the certificate must name the host;
/// - the host is resolved here, every address it resolves to is checked against
///   ``ForbiddenNetworks`` (loopback, private, link-local and cloud-metadata ranges…), and the
///   connection goes to a checked address, so a DNS answer that changes between check and
///   connect (rebinding) cannot steer it;
/// - no redirect is followed (any status but 200 is a refusal);
/// - at most ``maximumSize`` bytes are read, and the whole exchange must finish within
///   ``timeout`` however slowly the server trickles bytes;
/// - TLS 1.2 or later;
/// - at most ``maximumConcurrentFetches`` at once: more are refused at once rather than queued,
///   so a burst of made-up `client_id` URLs cannot hold the server's connections
///   (docs/threat-model.md RV22).
public struct GuardedDocumentFetcher: ClientMetadataFetching {
    public var maximumSize = ClientMetadataDocument.maximumSize
    public var timeout: TimeAmount = .seconds(5)
    /// How many documents may be fetched at once, by every copy of this fetcher together.
    public var maximumConcurrentFetches: Int {
        get { slots.maximum }
        set { slots = ConcurrencySlots(maximum: newValue) }
    }
    private var slots = ConcurrencySlots(maximum: 8)
    /// Key sets (`jwks_uri`) have slots of their own: slow metadata documents, which anyone may
    /// name, cannot hold every slot while a client's keys need reading.
    private var keySetSlots = ConcurrencySlots(maximum: 8)
    /// Back-channel logouts have slots of their own too: an app that never answers holds only these.
    private var logoutSlots = ConcurrencySlots(maximum: 8)
    /// For tests on one machine only: loopback addresses are allowed (never in production).
    public var allowLoopback = false
    /// A PEM file of extra certificate authorities to trust (for a test server's own CA).
    public var extraTrustRootsFile: String?

    public init(allowLoopback: Bool = false, extraTrustRootsFile: String? = nil) {
        self.allowLoopback = allowLoopback
        self.extraTrustRootsFile = extraTrustRootsFile
    }

    public func fetch(_ url: URL) async throws(FetchRefusal) -> FetchedDocument {
        guard slots.admit() else { throw FetchRefusal("too many documents are being fetched at once") }
        defer { slots.release() }
        // One deadline for everything, name resolution included (a resolver that never answers
        // must not hold the request).
        let outcome = await Self.withDeadline(timeoutSeconds) { () async -> Result<FetchedDocument, FetchRefusal> in
            do throws(FetchRefusal) {
                return .success(try await fetchWithoutDeadline(url))
            } catch {
                return .failure(error)
            }
        }
        return try (outcome ?? .failure(FetchRefusal("the server took too long to answer"))).get()
    }

    public func fetchKeySet(_ url: URL) async throws(FetchRefusal) -> FetchedDocument {
        var fetcher = self
        fetcher.maximumSize = AssertionKeySet.maximumSize
        fetcher.slots = keySetSlots
        return try await fetcher.fetch(url)
    }

    private var timeoutSeconds: Double {
        let (seconds, attoseconds) = Duration.nanoseconds(timeout.nanoseconds).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    private func fetchWithoutDeadline(_ url: URL) async throws(FetchRefusal) -> FetchedDocument {
        let (host, target) = try await checkedTarget(url)
        do {
            return try await withClient(host: host, at: target) { client in try await request(url, with: client) }
        } catch {
            throw Self.refusal(error)
        }
    }

    /// The host of an `https` URL and the address to connect to, every address it resolves to checked.
    private func checkedTarget(_ url: URL) async throws(FetchRefusal) -> (host: String, address: SocketAddress) {
        guard url.scheme == "https", let host = url.host, !host.isEmpty else { throw FetchRefusal("the URL is not https") }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let port = url.port ?? 443
        let addresses = try await Self.resolve(bareHost, port: port)
        for address in addresses where ForbiddenNetworks.isForbidden(Self.bytes(of: address), allowLoopback: allowLoopback) {
            throw FetchRefusal("\(host) resolves to an address this server does not connect to")
        }
        guard let target = addresses.first else { throw FetchRefusal("\(host) has no address") }
        return (bareHost, target)
    }

    /// What an exchange's failure is told as.
    private static func refusal(_ error: any Error) -> FetchRefusal {
        if let refusal = error as? FetchRefusal { return refusal }
        if let error = error as? HTTPClientError,
            [.deadlineExceeded, .readTimeout, .connectTimeout, .tlsHandshakeTimeout].contains(error)
        {
            // A server that accepts the connection and then says nothing runs out one of these
            // clocks, whichever ends first: each is the same refusal.
            return FetchRefusal("the server took too long to answer")
        }
        // The library's own error text names build paths and internals: it stays out of the answer.
        return FetchRefusal(isTLSFailure(error) ? tlsFailure : "the connection failed")
    }

    /// The result of `work`, or `nil` when it has not finished after `seconds`; `work` is left to
    /// finish (or fail) on its own.
    static func withDeadline<T: Sendable>(_ seconds: Double, _ work: @escaping @Sendable () async -> T) async -> T? {
        let once = ResumeOnce<T?>()
        return await withCheckedContinuation { continuation in
            once.set(continuation)
            Task { once.resume(with: await work()) }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                once.resume(with: nil)
            }
        }
    }

    /// Runs `body` with a client whose connections go to `address`, one already checked, while TLS
    /// verifies the certificate for `host` (async-http-client's DNS override: the name is sent as
    /// SNI and checked in the certificate; the address comes from the override, not from a second
    /// lookup).
    private func withClient<T>(host: String, at address: SocketAddress, _ body: (HTTPClient) async throws -> T)
        async throws -> T
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let extraTrustRootsFile { tls.additionalTrustRoots = [.file(extraTrustRootsFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: timeout, read: timeout), decompression: .disabled)
        configuration.httpVersion = .http1Only
        // One attempt: a refused handshake is an answer, not something to retry until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // An IP literal is connected to as it is (it was checked as it is); any name, to the
        // address checked for it.
        let isLiteral = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        if !isLiteral {
            guard let ip = address.ipAddress else { throw FetchRefusal("\(host) has no address") }
            configuration.dnsOverride = [host: ip]
        }
        // A client per fetch: the override is the client's, and the pool must not keep a connection
        // to an address checked for another fetch. Fetches are rare (documents are cached).
        let client = HTTPClient(
            eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func request(_ url: URL, with client: HTTPClient) async throws -> FetchedDocument {
        // The URL exactly as the client_id has it, escapes and all.
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Latchkey")
        // The deadline covers the handshake, the headers and every byte of the body.
        let deadline = NIODeadline.now() + timeout
        let response = try await client.execute(request, deadline: deadline)
        guard response.status == .ok else {
            let redirect = (300..<400).contains(Int(response.status.code))
            throw FetchRefusal(
                redirect
                    ? "the server answered with a redirect, which is not followed" : "the server answered \(response.status.code)"
            )
        }
        let type =
            (response.headers.first(name: "Content-Type") ?? "").lowercased()
            .split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json")) else {
            throw FetchRefusal("the document is not application/json")
        }
        let limit = maximumSize
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
            throw FetchRefusal("the document is larger than \(limit) bytes")
        }
        var maxAge: TimeInterval?
        var noStore = false
        for directive in response.headers[canonicalForm: "Cache-Control"].map({ $0.lowercased() }) {
            if directive == "no-store" || directive == "no-cache" { noStore = true }
            if directive.hasPrefix("max-age="), let seconds = UInt32(directive.dropFirst(8)) { maxAge = TimeInterval(seconds) }
        }
        var body: [UInt8] = []
        for try await part in response.body {
            guard body.count + part.readableBytes <= limit else {
                throw FetchRefusal("the document is larger than \(limit) bytes")
            }
            body += part.readableBytesView
        }
        return FetchedDocument(body: body, maxAge: maxAge, noStore: noStore)
    }

    /// The addresses `host` resolves to (getaddrinfo, on NIO's thread pool: it blocks).
    static func resolve(_ host: String, port: Int) async throws(FetchRefusal) -> [SocketAddress] {
        let result: Result<[SocketAddress], FetchRefusal> = await withCheckedContinuation { continuation in
            // getaddrinfo blocks: on the global queue, whose threads grow as needed, so a resolver
            // that never answers holds one thread, not the pool every other fetch needs.
            DispatchQueue.global().async {
                var hints = addrinfo()
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
                    continuation.resume(returning: .failure(FetchRefusal("\(host) could not be resolved")))
                    return
                }
                defer { freeaddrinfo(first) }
                var addresses: [SocketAddress] = []
                var entry: UnsafeMutablePointer<addrinfo>? = first
                while let current = entry {
                    if let raw = current.pointee.ai_addr {
                        switch current.pointee.ai_family {
                        case AF_INET:
                            let address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                            addresses.append(SocketAddress(address, host: host))
                        case AF_INET6:
                            let address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                            addresses.append(SocketAddress(address, host: host))
                        default: break
                        }
                    }
                    entry = current.pointee.ai_next
                }
                continuation.resume(returning: .success(addresses))
            }
        }
        return try result.get()
    }

    static let tlsFailure = "the TLS handshake failed: the certificate is not trusted or does not name the host"

    /// Whether `error` came from TLS (BoringSSL, or NIOSSL's own checks such as the host name).
    static func isTLSFailure(_ error: any Error) -> Bool {
        error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError
    }

    /// The raw bytes of an IP address: 4 for IPv4, 16 for IPv6 (none for anything else).
    static func bytes(of address: SocketAddress) -> [UInt8] {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            return []
        }
    }
}

/// A continuation resumed by whichever of two tasks finishes first, once.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    func set(_ continuation: CheckedContinuation<T, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    func resume(with value: T) {
        let waiting = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }
}

extension GuardedDocumentFetcher: BackChannelNotifying {
    /// POSTs the logout token with the same defences as a fetch: `https` to an address checked
    /// against ``ForbiddenNetworks``, no redirect followed, one deadline for the whole exchange, at
    /// most 4 KiB of the answer read, and slots of its own.
    public func postLogoutToken(_ token: String, to url: URL) async throws(FetchRefusal) -> Int {
        guard logoutSlots.admit() else { throw FetchRefusal("too many logouts are being sent at once") }
        defer { logoutSlots.release() }
        let outcome = await Self.withDeadline(timeoutSeconds) { () async -> Result<Int, FetchRefusal> in
            do throws(FetchRefusal) {
                let (host, target) = try await checkedTarget(url)
                do {
                    return .success(
                        try await withClient(host: host, at: target) { client in try await post(token, to: url, with: client) })
                } catch {
                    return .failure(Self.refusal(error))
                }
            } catch {
                return .failure(error)
            }
        }
        return try (outcome ?? .failure(FetchRefusal("the server took too long to answer"))).get()
    }

    private func post(_ token: String, to url: URL, with client: HTTPClient) async throws -> Int {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "User-Agent", value: "Latchkey")
        // A JWS in compact form is base64url and dots: nothing in it needs escaping in a form.
        request.body = .bytes(ByteBuffer(string: "logout_token=" + token))
        let response = try await client.execute(request, deadline: NIODeadline.now() + timeout)
        var read = 0
        for try await part in response.body {
            read += part.readableBytes
            if read > 4096 { break }
        }
        return Int(response.status.code)
    }
}
