/// The addresses a server-side fetch must never connect to (RFC 6890 special-use ranges): a
/// client metadata document URL is chosen by whoever sends the authorization request, so without
/// this check it could make Latchkey call the cloud's metadata service, the database, or any
/// other host behind the firewall (server-side request forgery).
public enum ForbiddenNetworks {
    /// Whether the address (4 bytes for IPv4, 16 for IPv6) lies in a range a fetch may not reach.
    /// - Parameter allowLoopback: for tests on one machine only (`--client-metadata-allow-loopback`).
    public static func isForbidden(_ address: [UInt8], allowLoopback: Bool = false) -> Bool {
        switch address.count {
        case 4: return isForbiddenIPv4(address, allowLoopback: allowLoopback)
        case 16: return isForbiddenIPv6(address, allowLoopback: allowLoopback)
        default: return true
        }
    }

    /// `(first bytes, prefix length in bits)` of the forbidden IPv4 ranges.
    static let ipv4: [([UInt8], Int)] = [
        ([0, 0, 0, 0], 8),  // "this network"
        ([10, 0, 0, 0], 8),  // private
        ([100, 64, 0, 0], 10),  // shared address space (carrier-grade NAT)
        ([169, 254, 0, 0], 16),  // link-local, where cloud metadata services answer (169.254.169.254)
        ([172, 16, 0, 0], 12),  // private
        ([192, 0, 0, 0], 24),  // IETF protocol assignments
        ([192, 0, 2, 0], 24),  // documentation
        ([192, 88, 99, 0], 24),  // 6to4 relay anycast
        ([192, 168, 0, 0], 16),  // private
        ([198, 18, 0, 0], 15),  // benchmarking
        ([198, 51, 100, 0], 24),  // documentation
        ([203, 0, 113, 0], 24),  // documentation
        ([224, 0, 0, 0], 4),  // multicast
        ([240, 0, 0, 0], 4),  // reserved, and broadcast
    ]

    static let ipv6: [([UInt8], Int)] = [
        ([0x01, 0x00] + Array(repeating: 0, count: 14), 64),  // discard-only
        ([0x20, 0x01, 0x00, 0x00] + Array(repeating: 0, count: 12), 23),  // IETF protocol assignments (incl. Teredo)
        ([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 12), 32),  // documentation
        ([0x20, 0x02] + Array(repeating: 0, count: 14), 16),  // 6to4
        ([0xfc] + Array(repeating: 0, count: 15), 7),  // unique local (fd00:ec2::254 is a metadata address)
        ([0xfe, 0x80] + Array(repeating: 0, count: 14), 10),  // link-local
        ([0xfe, 0xc0] + Array(repeating: 0, count: 14), 10),  // site-local (deprecated)
        ([0xff] + Array(repeating: 0, count: 15), 8),  // multicast
    ]

    static func isForbiddenIPv4(_ address: [UInt8], allowLoopback: Bool) -> Bool {
        if address[0] == 127 { return !allowLoopback }
        return ipv4.contains { matches(address, $0.0, bits: $0.1) }
    }

    static func isForbiddenIPv6(_ address: [UInt8], allowLoopback: Bool) -> Bool {
        let zeros = Array(repeating: UInt8(0), count: 15)
        if Array(address[0..<15]) == zeros {
            // :: (unspecified) and ::1 (loopback)
            return address[15] == 1 ? !allowLoopback : true
        }
        // An IPv4 address inside IPv6 is judged as the IPv4 address: mapped (::ffff:a.b.c.d),
        // compatible (::a.b.c.d), and NAT64 (64:ff9b::a.b.c.d, 64:ff9b:1::/48).
        let embedded = Array(address[12..<16])
        if Array(address[0..<10]) == Array(zeros[0..<10]), address[10] == address[11], address[10] == 0 || address[10] == 0xff {
            return isForbiddenIPv4(embedded, allowLoopback: allowLoopback)
        }
        if Array(address[0..<12]) == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] {
            return isForbiddenIPv4(embedded, allowLoopback: allowLoopback)
        }
        if Array(address[0..<6]) == [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01] { return true }
        return ipv6.contains { matches(address, $0.0, bits: $0.1) }
    }

    /// Whether the first `bits` bits of `address` and `prefix` agree.
    public static func matches(_ address: [UInt8], _ prefix: [UInt8], bits: Int) -> Bool {
        var remaining = bits
        for index in 0..<prefix.count where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if address[index] & mask != prefix[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}
