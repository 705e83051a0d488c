import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

/// The token read every bearer use, introspection and refresh makes, with whether its grant has
/// ended (the grant revoked, or its user disabled or gone: ``TokenRecord/grantEnded``, threat
/// model RV1, RV2).
///
/// A named prepared statement: each pooled connection parses and plans it once, where an unnamed
/// statement is planned on every use; planning costs more than running this read of three
/// primary keys.
struct TokenByHash: PostgresPreparedStatement {
    static let name = "latchkey_token_by_hash"
    static let sql = TokenColumns.query(hash: "").numberedSQL
    static let bindingDataTypes: [PostgresDataType] = [.text]

    var hash: TokenHash

    func makeBindings() throws -> PostgresBindings { TokenColumns.query(hash: hash).bindings }

    func decodeRow(_ row: PostgresRow) throws -> TokenRecord {
        try TokenColumns.readWithGrantEnded(PostgresSQLRow(row: row.makeRandomAccess()))
    }
}

/// ``TokenByHash`` with the token's user joined, for `/userinfo` (``PostgresStore/tokenWithUser(hash:)``),
/// prepared the same way.
struct TokenWithUserByHash: PostgresPreparedStatement {
    static let name = "latchkey_token_with_user_by_hash"
    static let sql = TokenColumns.queryWithUser(hash: "").numberedSQL
    static let bindingDataTypes: [PostgresDataType] = [.text]

    var hash: TokenHash

    func makeBindings() throws -> PostgresBindings { TokenColumns.queryWithUser(hash: hash).bindings }

    func decodeRow(_ row: PostgresRow) throws -> (token: TokenRecord, user: User?) {
        try TokenColumns.readWithUser(PostgresSQLRow(row: row.makeRandomAccess()))
    }
}
