import Foundation

/// A set of resource indicators (RFC 8707 §2): the absolute URIs of the protected resources an
/// access token is meant for. Kept sorted and without duplicates, so two sets with the same URIs
/// are equal and store the same text.
public struct ResourceSet: Sendable, Hashable, Sequence, CustomStringConvertible {
    /// The URIs, sorted.
    public let uris: [String]

    public init(_ uris: some Sequence<String>) {
        self.uris = Array(Set(uris)).sorted()
    }

    /// The empty set: a token for no particular resource (the request named none).
    public static let none = ResourceSet([String]())

    /// Reads the stored form: URIs separated by single spaces (a URI holds no space).
    public init(storeValue text: String) {
        self.init(text.split(separator: " ").map(String.init))
    }

    /// The stored form, and what error messages show: the URIs joined with single spaces.
    public var description: String { uris.joined(separator: " ") }
    public var isEmpty: Bool { uris.isEmpty }
    public var count: Int { uris.count }
    public func makeIterator() -> IndexingIterator<[String]> { uris.makeIterator() }
    public func contains(_ uri: String) -> Bool { uris.contains(uri) }
    public func isSubset(of other: ResourceSet) -> Bool { uris.allSatisfy(other.contains) }
    public func union(_ other: ResourceSet) -> ResourceSet { ResourceSet(uris + other.uris) }

    /// Whether `text` may name a resource (RFC 8707 §2): an absolute `https` URI, or `http` on a
    /// loopback host (for development), with a host, no fragment, no user information, no
    /// whitespace or NUL and at most 2,000 bytes. A query is allowed, as the RFC allows it, though it
    /// advises against one.
    public static func isValidIndicator(_ text: String) -> Bool {
        guard text.utf8.count <= 2000, !text.utf8.contains(0), !text.contains(where: { $0.isWhitespace || $0.isNewline }),
            let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty,
            components.fragment == nil, components.user == nil, components.password == nil
        else { return false }
        switch scheme {
        case "https": return true
        case "http": return ["127.0.0.1", "localhost", "[::1]", "::1"].contains(host.lowercased())
        default: return false
        }
    }
}
