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
/// primary keys. The columns are listed, not `t.*`, so that a column a later schema step adds does
/// not change the result of a statement already prepared.
struct TokenByHash: PostgresPreparedStatement {
    static let name = "latchkey_token_by_hash"
    static let sql = """
        SELECT t.hash, t.kind, t.grant_id, t.client_id, t.user_id, t.scope, t.created_at, t.expires_at, t.revoked_at,
            t.rotated_at, t.successor_hash, t.issued_with, t.audience, t.jkt, t.verifier,
            (EXISTS (SELECT 1 FROM grants g WHERE g.id = t.grant_id AND g.revoked_at IS NOT NULL)
                OR (t.user_id IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND u.disabled_at IS NULL))) AS grant_ended
        FROM tokens t WHERE t.hash = $1
        """
    static let bindingDataTypes: [PostgresDataType] = [.text]

    var hash: TokenHash

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(hash.rawValue)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> TokenRecord {
        let row = row.makeRandomAccess()
        var token = TokenRecord(
            hash: try TokenHash(rawValue: row.string("hash")), kind: TokenKind(rawValue: try row.string("kind")) ?? .access,
            grantID: try GrantID(rawValue: row.string("grant_id")),
            clientID: try ClientID(rawValue: row.string("client_id")),
            userID: try row.optionalString("user_id").map(UserID.init(rawValue:)),
            scope: try row.scope("scope"), createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            revokedAt: try row.optionalDate("revoked_at"), rotatedAt: try row.optionalDate("rotated_at"),
            successorHash: try row.optionalString("successor_hash").map(TokenHash.init(rawValue:)),
            issuedWith: try row.optionalString("issued_with").map(TokenHash.init(rawValue:)),
            audience: ResourceSet(storeValue: try row.string("audience")),
            keyThumbprint: try row.optionalString("jkt"), verifierDigest: try row.optionalString("verifier"))
        token.grantEnded = try row["grant_ended"].decode(Bool.self)
        return token
    }
}
