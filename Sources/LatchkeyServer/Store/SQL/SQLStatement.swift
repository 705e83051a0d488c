import Foundation
import LatchkeyCore

/// A value bound to a statement's placeholder. Each case keeps its type when it is `NULL`, so that
/// PostgreSQL is told a parameter's type even where the statement does not show it.
public enum SQLValue: Sendable, Equatable {
    case text(String?)
    case integer(Int?)
    /// Instants are kept as seconds since 1970 (`REAL` / `double precision`).
    case real(Double?)
    /// `INTEGER` 0 or 1 in SQLite, `boolean` in PostgreSQL.
    case boolean(Bool?)
}

/// One SQL statement as both stores run it: text with `?` placeholders and the values bound to
/// them in order, written once with string interpolation, `"SELECT … WHERE id = \(id)"`. SQLite
/// takes the text as it is; PostgreSQL's driver numbers the placeholders (``numberedSQL``). The
/// text written here never holds a `?` of its own.
///
/// A value that cannot name or hold a stored row makes the statement one that is not run
/// (``isRunnable``): a key over ``StoreKey/maximumLength`` or any text with a NUL character, which
/// SQLite's C API would cut at the NUL (so `web\0evil` would find `web`) and PostgreSQL refuses
/// (docs/threat-model.md T35). Such a statement finds no row and changes none, in every store,
/// because the check is made where the value enters the statement.
public struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    public private(set) var sql: String
    public private(set) var values: [SQLValue]
    /// False when a bound value could not name or hold a row: the statement is not run.
    public private(set) var isRunnable: Bool

    public init(sql: String, values: [SQLValue] = []) {
        self.sql = sql
        self.values = values
        isRunnable = true
    }

    public init(stringLiteral value: String) { self.init(sql: value) }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        values = stringInterpolation.values
        isRunnable = stringInterpolation.isRunnable
    }

    /// The text with PostgreSQL's numbered placeholders (`$1`, `$2`, …) in place of `?`.
    public var numberedSQL: String {
        // Over the UTF-8 bytes: `?` is one byte, and walking characters costs far more.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sql.utf8.count + 3 * values.count)
        var number = 0
        for byte in sql.utf8 {
            if byte == UInt8(ascii: "?") {
                number += 1
                bytes.append(UInt8(ascii: "$"))
                bytes.append(contentsOf: String(number).utf8)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// This statement followed by `other`, as one text.
    public func appending(_ other: SQLStatement) -> SQLStatement {
        var joined = self
        joined.sql += other.sql
        joined.values += other.values
        joined.isRunnable = isRunnable && other.isRunnable
        return joined
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var values: [SQLValue] = []
        var isRunnable = true

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount)
            values.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        private mutating func bind(_ value: SQLValue) {
            sql += "?"
            values.append(value)
        }

        public mutating func appendInterpolation(_ value: String?) {
            if let value, Self.holdsNUL(value) { isRunnable = false }
            bind(.text(value))
        }

        public mutating func appendInterpolation<Role>(_ key: StoreKey<Role>?) {
            if let key, key.rawValue.utf8.count > StoreKey<Role>.maximumLength || Self.holdsNUL(key.rawValue) {
                isRunnable = false
            }
            bind(.text(key?.rawValue))
        }

        /// Whether `text` holds a NUL byte: with `memchr` over the UTF-8 bytes where the string has
        /// them in one piece, as every native string does (every value of every statement is checked).
        private static func holdsNUL(_ text: String) -> Bool {
            text.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false
            } ?? text.utf8.contains(0)
        }

        public mutating func appendInterpolation(_ value: Int?) { bind(.integer(value)) }

        public mutating func appendInterpolation(_ value: Bool?) { bind(.boolean(value)) }

        /// An instant, as seconds since 1970.
        public mutating func appendInterpolation(_ value: Date?) { bind(.real(value?.timeIntervalSince1970)) }

        /// Scopes as the space-separated text the store keeps.
        public mutating func appendInterpolation(_ value: ScopeSet) { appendInterpolation(value.description) }

        /// Resource indicators as the text the store keeps (``ResourceSet/init(storeValue:)``).
        public mutating func appendInterpolation(_ value: ResourceSet) { appendInterpolation(value.description) }

        /// Another statement's text and values, in place.
        public mutating func appendInterpolation(_ fragment: SQLStatement) {
            sql += fragment.sql
            values += fragment.values
            isRunnable = isRunnable && fragment.isRunnable
        }

        /// SQL text from the source itself (a column list, a table name, a shared fragment), never
        /// a value: values go through the other interpolations, as bound parameters.
        public mutating func appendInterpolation(sql text: String) { sql += text }
    }
}
