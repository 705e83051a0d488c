import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A free TCP port held for `serve --port 0`: the issuer names the port before the server binds it,
/// so the port is reserved first by a socket bound with `SO_REUSEADDR` that never listens. The
/// server's own listening socket (Hummingbird sets `SO_REUSEADDR` too) may then bind the same port,
/// and no other process can take it in between. Close the reservation once the server listens.
final class PortReservation: Sendable {
    let port: Int
    private let descriptor: Mutex<Int32?>

    /// Binds a non-listening socket to an ephemeral port of `host` (an IPv4 or IPv6 literal, or
    /// `localhost`). - Returns: `nil` when the host is not such an address or binding fails.
    init?(host: String) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            family = AF_INET
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            family = AF_INET6
        } else {
            return nil
        }
        #if canImport(Glibc)
            let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(family, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        if family == AF_INET {
            v4.sin_family = sa_family_t(AF_INET)
            bound = withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        } else {
            v6.sin6_family = sa_family_t(AF_INET6)
            bound = withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        var address = sockaddr_in6()  // large enough for either family
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            close(fd)
            return nil
        }
        // sin_port and sin6_port sit at the same offset, in network byte order.
        self.port = Int(UInt16(bigEndian: address.sin6_port))
        self.descriptor = Mutex(fd)
    }

    /// Closes the reserving socket (once; later calls do nothing).
    func release() {
        descriptor.withLock { fd in
            if let open = fd { close(open) }
            fd = nil
        }
    }

    deinit { release() }
}
