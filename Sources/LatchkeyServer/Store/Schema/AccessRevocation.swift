/// What ends a user's access to apps, for every store, written once: the statements a store runs,
/// in this order and in one transaction, when a password changes, an account is disabled, or the
/// user (or an administrator) disconnects one app.
///
/// Before them the store locks the user's row (the password or `disabled_at` update does; a
/// disconnect selects it `FOR UPDATE`). A code redemption reads the same row `FOR SHARE` and a
/// refresh locks its grant's row, so on PostgreSQL each of them either finishes before these
/// statements see the user's grants, codes and tokens, or waits and then finds the user disabled
/// or its grant revoked (docs/threat-model.md RV1, RV3).
public enum AccessRevocation {
    /// A value a statement binds, in the order its `?` placeholders appear.
    public enum Parameter: Sendable { case at, user, client }

    public struct Statement: Sendable {
        public let sql: String
        public let parameters: [Parameter]
    }

    /// For every app of the user, or (`oneClient`) for the client bound as `.client`:
    /// approved device requests not yet redeemed are denied, outstanding codes (an approved device
    /// request's included) deleted, then grants and their tokens revoked.
    public static func statements(oneClient: Bool) -> [Statement] {
        let scope = oneClient ? "user_id = ? AND client_id = ?" : "user_id = ?"
        let owner: [Parameter] = oneClient ? [.user, .client] : [.user]
        return [
            Statement(
                sql: """
                    UPDATE device_authorizations SET status = 'denied' WHERE status = 'approved' AND device_code_hash IN
                        (SELECT code_hash FROM authorization_codes WHERE \(scope) AND consumed_at IS NULL)
                    """, parameters: owner),
            Statement(sql: "DELETE FROM authorization_codes WHERE \(scope) AND consumed_at IS NULL", parameters: owner),
            Statement(sql: "UPDATE grants SET revoked_at = ? WHERE \(scope) AND revoked_at IS NULL", parameters: [.at] + owner),
            Statement(sql: "UPDATE tokens SET revoked_at = ? WHERE \(scope) AND revoked_at IS NULL", parameters: [.at] + owner),
        ]
    }
}
