import Foundation
import LatchkeyCore

/// A row of a result, read by column position, as each store's driver gives it. Rows are read by
/// position over column lists written beside their readers: reading by name cost more than the
/// query on the hot paths.
///
/// A driver implements the four optional readers; what follows is written once. A value of the
/// wrong type, a `NULL` where the column may not hold one, or an enumeration's text this build
/// does not know is an error (``StoreError/unavailable(_:)``), never a silent default.
public protocol SQLRow {
    func optionalString(_ index: Int) throws -> String?
    func optionalInt(_ index: Int) throws -> Int?
    func optionalDouble(_ index: Int) throws -> Double?
    func optionalBool(_ index: Int) throws -> Bool?
}

extension SQLRow {
    // Each reader unwraps on its own, without a generic helper: rows are read on every request,
    // and a generic call here cost a metadata lookup per column in profiles.
    public func string(_ index: Int) throws -> String {
        guard let value = try optionalString(index) else { throw Self.null(index) }
        return value
    }
    public func int(_ index: Int) throws -> Int {
        guard let value = try optionalInt(index) else { throw Self.null(index) }
        return value
    }
    public func bool(_ index: Int) throws -> Bool {
        guard let value = try optionalBool(index) else { throw Self.null(index) }
        return value
    }

    public func date(_ index: Int) throws -> Date {
        guard let value = try optionalDouble(index) else { throw Self.null(index) }
        return Date(timeIntervalSince1970: value)
    }
    public func optionalDate(_ index: Int) throws -> Date? {
        try optionalDouble(index).map(Date.init(timeIntervalSince1970:))
    }

    // Inlined, so that the key's type is known where it is read, not looked up at run time.
    @inline(__always)
    public func key<Role>(_ index: Int) throws -> StoreKey<Role> { StoreKey(rawValue: try string(index)) }
    @inline(__always)
    public func optionalKey<Role>(_ index: Int) throws -> StoreKey<Role>? {
        try optionalString(index).map(StoreKey.init(rawValue:))
    }

    /// A space-separated list of scopes.
    public func scope(_ index: Int) throws -> ScopeSet { ScopeSet(try string(index).split(separator: " ").map(String.init)) }
    public func resources(_ index: Int) throws -> ResourceSet { ResourceSet(storeValue: try string(index)) }
    /// A newline-separated list (redirect URIs).
    public func lines(_ index: Int) throws -> [String] { try string(index).split(separator: "\n").map(String.init) }

    /// An enumeration kept by its raw text; text this build does not know is an error.
    @inline(__always)
    public func value<Value: RawRepresentable>(_ index: Int, as type: Value.Type = Value.self) throws -> Value
    where Value.RawValue == String {
        let text = try string(index)
        guard let value = Value(rawValue: text) else {
            throw StoreError.unavailable("The store holds \(Value.self) \"\(text)\", which this Latchkey does not know.")
        }
        return value
    }

    private static func null(_ index: Int) -> StoreError {
        StoreError.unavailable("Column \(index) of a stored row is unexpectedly NULL.")
    }
}
