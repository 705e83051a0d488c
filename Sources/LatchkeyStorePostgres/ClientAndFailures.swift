import Foundation
import LatchkeyServer
import PostgresNIO

/// The client read of every client authentication, with the failures counted against it
/// (``PostgresStore/clientAndFailures(id:knownKey:unknownKey:at:)``): a named prepared statement,
/// planned once per pooled connection, as ``TokenByHash`` is and for the same reasons.
struct ClientAndFailures: PostgresPreparedStatement {
    /// Every column ``PostgresStore/client(_:)`` reads, so a column a later schema step adds does not
    /// change the result of a statement already prepared.
    static let clientColumns = """
        c.id, c.name, c.type, c.secret_hash, c.redirect_uris, c.post_logout_redirect_uris, c.scopes, c.logo_uri,
        c.privacy_policy_uri, c.consent_markdown, c.owner_user_id, c.first_party, c.allow_implicit, c.allow_device_code,
        c.access_token_lifetime, c.refresh_token_lifetime, c.registration, c.registration_access_token_hash,
        c.metadata_expires_at, c.id_token_signed_response_alg, c.require_pushed_authorization_requests, c.created_at
        """
    static let name = "latchkey_client_and_failures"
    static let sql = """
        SELECT \(clientColumns), t.failures AS throttle_failures, t.ends_at AS throttle_ends_at
        FROM (SELECT $1::text AS wanted) AS w
        LEFT JOIN clients c ON c.id = w.wanted
        LEFT JOIN throttles t ON t.key = (CASE WHEN c.id IS NULL THEN $2::text ELSE $3::text END) AND t.ends_at > $4
        """
    static let bindingDataTypes: [PostgresDataType] = [.text, .text, .text, .float8]

    var id: ClientID
    var knownKey: ThrottleKey
    var unknownKey: ThrottleKey
    var at: Date

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(id.rawValue)
        bindings.append(unknownKey.rawValue)
        bindings.append(knownKey.rawValue)
        bindings.append(at.timeIntervalSince1970)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (Client?, ThrottleWindow?) {
        let row = row.makeRandomAccess()
        let client = try row.optionalString("id") == nil ? nil : try PostgresStore.client(row)
        let failures = try row["throttle_failures"].decode(Int?.self)
        return (client, try failures.map { ThrottleWindow(failures: $0, endsAt: try row.date("throttle_ends_at")) })
    }
}
