import GRDB
import LatchkeyServer

// Store keys go to and come from SQLite as the TEXT they wrap, so statement arguments take them
// and rows decode into them directly.
extension StoreKey: SQLExpressible, StatementBinding, DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Self? {
        String.fromDatabaseValue(dbValue).map(Self.init(rawValue:))
    }
}
