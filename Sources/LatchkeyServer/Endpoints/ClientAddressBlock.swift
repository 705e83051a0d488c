#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The part of a client's address that per-address throttles count against
/// (docs/threat-model.md RV14): an IPv4 address whole; an IPv6 address by its /64, since one
/// subscriber is given at least a /64 (RFC 6177) and counting whole addresses would give one
/// attacker 2⁶⁴ budgets; an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack
/// listener reports) as its IPv4 address. Anything else is kept as it is.
public enum ClientAddressBlock {
    public static func of(_ address: String) -> String {
        guard var bytes = bytes(address) else { return address }
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        for index in 8..<16 { bytes[index] = 0 }
        var v6 = in6_addr()
        withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return address }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address in text, brackets and a zone allowed, or
    /// `nil`. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address's 4 bytes.
    public static func bytes(_ address: String) -> [UInt8]? {
        var text = address
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }
}
