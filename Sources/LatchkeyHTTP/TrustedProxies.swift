import HTTPTypes
import Hummingbird
import LatchkeyServer

/// The reverse proxies whose `X-Forwarded-For` is believed (`serve --trusted-proxy CIDR`). Without
/// one, the client address is the peer's, whatever the headers say: anyone can write them.
public struct TrustedProxies: Sendable {
    struct Network: Sendable {
        var address: [UInt8]
        var prefix: Int
    }

    let networks: [Network]

    /// - Throws: ``AdministrationError`` naming the first value that is not `ADDRESS/BITS` or `ADDRESS`.
    public init(_ cidrs: [String]) throws {
        networks = try cidrs.map { text in
            let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
            guard let address = Self.bytes(parts[0]) else {
                throw AdministrationError("--trusted-proxy \(text): not an IP address or CIDR range (such as 10.0.0.0/8).")
            }
            // An IPv4-mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps (10.0.0.0/8).
            let mapped = address.count == 4 && parts[0].contains(":")
            let prefix = parts.count == 2 ? Int(parts[1]).map { mapped ? $0 - 96 : $0 } : address.count * 8
            guard let prefix, (0...(address.count * 8)).contains(prefix) else {
                throw AdministrationError("--trusted-proxy \(text): the prefix length must be 0 to \(address.count * 8).")
            }
            return Network(address: address, prefix: prefix)
        }
    }

    public var isEmpty: Bool { networks.isEmpty }

    /// No proxy is trusted: every peer is the client.
    static let none = TrustedProxies(networks: [])

    private init(networks: [Network]) { self.networks = networks }

    /// Whether `address` (text) lies in one of the ranges.
    func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(address) else { return false }
        return networks.contains { network in
            network.address.count == bytes.count && ForbiddenNetworks.matches(bytes, network.address, bits: network.prefix)
        }
    }

    /// The client's address: the peer's, unless the peer is a trusted proxy; then the nearest
    /// address in `X-Forwarded-For`, read from the right, that is not a trusted proxy (what the
    /// client itself wrote further left cannot be believed). A malformed entry stops the walk at
    /// the last trusted hop.
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        guard contains(peer) else { return peer }
        var address = peer
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            let bare = hop.hasPrefix("[") && hop.hasSuffix("]") ? String(hop.dropFirst().dropLast()) : hop
            guard Self.bytes(bare) != nil else { return address }
            address = bare
            if !contains(bare) { return bare }
        }
        return address
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address in text, or `nil`; an IPv4-mapped IPv6
    /// address (what a dual-stack listener reports for an IPv4 peer) is its IPv4 address, so an
    /// IPv4 range matches it (docs/threat-model.md RV15).
    static func bytes(_ text: String) -> [UInt8]? { ClientAddressBlock.bytes(text) }
}
