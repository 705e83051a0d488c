import Foundation
import LatchkeyCore

/// What ends a user's access to apps, for every store, written once: the statements a store runs,
/// in this order and in one transaction, when a password changes, an account is disabled, or the
/// user (or an administrator) disconnects one app.
///
/// The user's access epoch moves first (``User/accessEpoch``): on PostgreSQL that locks the user's
/// row, which a code or implicit token being stored share-locks, so the two are ordered. A code
/// stored first is then deleted here; one stored after finds the epoch moved and is not stored
/// (docs/threat-model.md RV23).
///
/// Codes go before grants, and grants before tokens. A code redemption updates its code's row, so
/// on PostgreSQL a redemption either commits first, and the later statements (each with a fresh
/// snapshot under READ COMMITTED) see and revoke the grant it stored, or waits for the deletion and
/// finds no code. A refresh racing the revocation may still store tokens into a revoked grant;
/// they are dead all the same, since a token's life is read from its grant and its user
/// (``TokenRecord/grantEnded``, docs/threat-model.md RV1–RV3).
public enum AccessRevocation {
    /// For every app of `user` (a statement naming the user's id: a bound id, or a subquery), or
    /// for `client` alone: the user's access epoch moves, approved device requests not yet
    /// redeemed are denied, outstanding codes (an approved device request's included) deleted,
    /// then grants and their tokens revoked at `at`.
    public static func steps(user: SQLStatement, client: ClientID?, at: Date) -> [SQLStep] {
        let owner: SQLStatement = client.map { "user_id = \(user) AND client_id = \($0)" } ?? "user_id = \(user)"
        // The user's access ending everywhere ends their sessions at every app that asked to be
        // told (back-channel logout): queued after the outstanding codes are deleted (a redemption
        // racing this either made its grant before, and is read here, or finds its code gone) and
        // before the grants it reads are revoked.
        let logouts: [SQLStep] = client == nil ? [.run(LogoutQueue.enqueue(user: user, at: at))] : []
        return [
            .run("UPDATE users SET access_epoch = access_epoch + 1 WHERE id = \(user)"),
            .run(
                """
                UPDATE device_authorizations SET status = 'denied' WHERE status = 'approved' AND device_code_hash IN
                    (SELECT code_hash FROM authorization_codes WHERE \(owner) AND consumed_at IS NULL)
                """),
            .run("DELETE FROM authorization_codes WHERE \(owner) AND consumed_at IS NULL"),
        ] + logouts + [
            .run("UPDATE grants SET revoked_at = \(at) WHERE \(owner) AND revoked_at IS NULL"),
            .run("UPDATE tokens SET revoked_at = \(at) WHERE \(owner) AND revoked_at IS NULL"),
        ]
    }
}
