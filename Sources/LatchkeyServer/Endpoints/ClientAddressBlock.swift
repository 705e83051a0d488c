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
        var text = address
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return text }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return address }
        var bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        for index in 8..<16 { bytes[index] = 0 }
        withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return address }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }
}
