/// A set of scope tokens (RFC 6749 §3.3): `scope = scope-token *( SP scope-token )`,
/// `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`. Order is kept for display; comparison is as sets.
public struct ScopeSet: Sendable, Hashable, Sequence, CustomStringConvertible {
    /// The scope tokens, without duplicates, in the order first given.
    public private(set) var names: [String]

    /// Parses a space-delimited `scope` value. A double space, a leading or trailing space, or a
    /// character outside the scope-token grammar is refused (docs/threat-model.md T35).
    /// - Returns: `nil` when `text` does not follow the grammar.
    public init?(parsing text: String) {
        var names: [String] = []
        for token in text.split(separator: " ", omittingEmptySubsequences: false) {
            guard Self.isScopeToken(token) else { return nil }
            if !names.contains(String(token)) { names.append(String(token)) }
        }
        self.names = names
    }

    /// A set from names that are already known to be valid.
    public init(_ names: some Sequence<String>) {
        var unique: [String] = []
        for name in names where !unique.contains(name) { unique.append(name) }
        self.names = unique
    }

    /// The wire form: names joined with single spaces.
    public var description: String { names.joined(separator: " ") }
    public var isEmpty: Bool { names.isEmpty }
    public func makeIterator() -> IndexingIterator<[String]> { names.makeIterator() }
    public func contains(_ name: String) -> Bool { names.contains(name) }
    public func isSubset(of other: ScopeSet) -> Bool { names.allSatisfy(other.contains) }
    /// The names of `self` that are also in `other`, in `self`'s order.
    public func intersection(_ other: ScopeSet) -> ScopeSet { ScopeSet(names.filter(other.contains)) }
    /// `self` followed by the names of `other` not already in it.
    public func union(_ other: ScopeSet) -> ScopeSet { ScopeSet(names + other.names) }

    public static func == (lhs: ScopeSet, rhs: ScopeSet) -> Bool {
        Set(lhs.names) == Set(rhs.names)
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(Set(names)) }

    /// Whether `token` is one RFC 6749 §3.3 scope-token.
    public static func isScopeToken(_ token: some StringProtocol) -> Bool {
        !token.isEmpty
            && token.utf8.allSatisfy { byte in
                byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
            }
    }
}
