import Foundation
import LatchkeyCore

// Codes, grants and tokens. The operations that must happen exactly once are conditional updates
// whose count of changed rows decides the winner (a required step), inside the transaction that
// stores the results: a concurrent second updater waits for the first (SQLite's one writer,
// PostgreSQL's row lock) and then finds its condition false.
extension SQLDatabase {
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        try await insert("INSERT INTO authorization_codes (\(sql: CodeColumns.list)) VALUES (\(CodeColumns.values(code)))")
    }

    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord, whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        try await run(
            """
            INSERT INTO authorization_codes (\(sql: CodeColumns.list)) SELECT \(CodeColumns.values(code))
            WHERE \(accessUnchanged(user: code.userID, since: accessEpoch))
            """) == 1
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord], whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        guard let user = grant.userID else { return false }
        let stored: SQLStep = .require(
            """
            INSERT INTO grants (\(sql: GrantColumns.stored)) SELECT \(GrantColumns.values(grant, tokens: tokens))
            WHERE \(accessUnchanged(user: user, since: accessEpoch))
            """)
        return try await write([stored] + tokens.map { .run(TokenColumns.insert($0)) }) != nil
    }

    /// True while the user is enabled and their access epoch is still `accessEpoch` (RV23).
    private func accessUnchanged(user: UserID, since accessEpoch: Int) -> SQLStatement {
        "EXISTS (SELECT 1 FROM users WHERE id = \(user) AND access_epoch = \(accessEpoch) AND disabled_at IS NULL)"
    }

    public func authorizationCode(hash: CodeHash) async throws -> AuthorizationCodeRecord? {
        try await row("SELECT \(sql: CodeColumns.list) FROM authorization_codes WHERE code_hash = \(hash)", CodeColumns.read)
    }

    public func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    {
        // The user must still be enabled: disabling deletes outstanding codes, and this keeps a
        // code read before that from becoming a grant after it.
        let redeemed: SQLStep = .require(
            """
            UPDATE authorization_codes SET consumed_at = \(at), grant_id = \(grant.id)
            WHERE code_hash = \(codeHash) AND consumed_at IS NULL
                AND EXISTS (SELECT 1 FROM users u WHERE u.id = authorization_codes.user_id AND u.disabled_at IS NULL)
            """)
        return try await write(
            [redeemed, .run(GrantColumns.insert(grant, tokens: tokens))] + tokens.map { .run(TokenColumns.insert($0)) })
            != nil
    }

    public func token(hash: TokenHash) async throws -> TokenRecord? {
        try await row(TokenColumns.query(hash: hash), TokenColumns.readWithGrantEnded)
    }

    public func tokenWithUser(hash: TokenHash) async throws -> (token: TokenRecord, user: User?)? {
        try await row(TokenColumns.queryWithUser(hash: hash), TokenColumns.readWithUser)
    }

    public func rotateRefreshToken(hash: TokenHash, successors: [TokenRecord], at: Date) async throws -> Bool {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        let rotated: SQLStep = .require(
            """
            UPDATE tokens SET rotated_at = \(at), successor_hash = \(successorHash)
            WHERE hash = \(hash) AND kind = 'refresh' AND rotated_at IS NULL AND revoked_at IS NULL
                AND NOT \(sql: TokenColumns.grantEnded("tokens"))
            """)
        return try await write([rotated] + successors.map { .run(TokenColumns.insert($0)) }) != nil
    }

    public func reissueWithinGrace(originalHash: TokenHash, retiredHash: TokenHash, successors: [TokenRecord], at: Date)
        async throws -> Bool
    {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        let steps: [SQLStep] =
            [
                // The grant's row first, as revokeGrant(id:at:) takes it: a reissue and a revocation of
                // one grant then wait for each other instead of each holding a token the other needs
                // (a deadlock PostgreSQL ends by failing one). A revoked grant stops the reissue here.
                .require(
                    """
                    UPDATE grants SET revoked_at = NULL
                    WHERE id = (SELECT grant_id FROM tokens WHERE hash = \(retiredHash)) AND revoked_at IS NULL
                    """),
                // Retire the unused successor: rotated with no successor, so presenting it later is reuse.
                .require(
                    """
                    UPDATE tokens SET rotated_at = \(at), successor_hash = NULL
                    WHERE hash = \(retiredHash) AND rotated_at IS NULL AND revoked_at IS NULL
                        AND NOT \(sql: TokenColumns.grantEnded("tokens"))
                    """),
                // Found through the grant's index: there is none on issued_with.
                .run(
                    """
                    UPDATE tokens SET revoked_at = \(at)
                    WHERE grant_id = (SELECT grant_id FROM tokens WHERE hash = \(retiredHash)) AND issued_with = \(retiredHash)
                        AND revoked_at IS NULL
                    """),
                .run("UPDATE tokens SET successor_hash = \(successorHash) WHERE hash = \(originalHash)"),
            ] + successors.map { .run(TokenColumns.insert($0)) }
        return try await write(steps) != nil
    }

    public func revokeGrant(id: GrantID, at: Date) async throws {
        _ = try await write([
            .run("UPDATE grants SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL"),
            .run("UPDATE tokens SET revoked_at = \(at) WHERE grant_id = \(id) AND revoked_at IS NULL"),
        ])
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws {
        let steps: [SQLStep] =
            [.require(GrantColumns.insert(grant, tokens: tokens))] + tokens.map { .require(TokenColumns.insert($0)) }
        guard try await write(steps) != nil else { throw StoreError.conflict("The grant was not stored.") }
    }

    public func revokeToken(hash: TokenHash, at: Date) async throws {
        try await run("UPDATE tokens SET revoked_at = \(at) WHERE hash = \(hash) AND revoked_at IS NULL")
    }

    public func activeGrantCounts(at: Date) async throws -> [ClientID: Int] {
        let counts = try await rows(
            """
            SELECT g.client_id, count(*) FROM grants g WHERE g.revoked_at IS NULL
            AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > \(at))
            GROUP BY g.client_id
            """
        ) { row -> (ClientID, Int) in (try row.key(0), try row.int(1)) }
        return Dictionary(uniqueKeysWithValues: counts)
    }

    public func activeGrants(userID: UserID, at: Date) async throws -> [GrantRecord] {
        try await rows(
            """
            SELECT \(sql: GrantColumns.list) FROM grants g WHERE g.user_id = \(userID) AND g.revoked_at IS NULL
            AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > \(at))
            ORDER BY g.created_at DESC
            """, GrantColumns.read)
    }

    public func grant(id: GrantID) async throws -> GrantRecord? {
        try await row("SELECT \(sql: GrantColumns.list) FROM grants WHERE id = \(id)", GrantColumns.read)
    }

    public func revokeAuthorization(userID: UserID, clientID: ClientID, at: Date) async throws {
        _ = try await write(
            AccessRevocation.steps(user: "\(userID)", client: clientID, at: at)
                + [.run("DELETE FROM consents WHERE user_id = \(userID) AND client_id = \(clientID)")])
    }

    public func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int {
        try await ExpiryPurge.run(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: unusedRegistrationRetention
        ) { sql, cutoff in
            try await run(SQLStatement(sql: sql, values: [.real(cutoff)]))
        }
    }
}

/// The columns of an authorization code, in the order ``read(_:)`` reads and ``values(_:)`` binds them.
enum CodeColumns {
    static let list = """
        code_hash, client_id, user_id, redirect_uri, redirect_uri_parameter, scope, code_challenge, created_at, expires_at,
        consumed_at, grant_id, nonce, auth_time, resources, verifier, dpop_jkt, amr, sid
        """

    static func values(_ code: AuthorizationCodeRecord) -> SQLStatement {
        """
        \(code.codeHash), \(code.clientID), \(code.userID), \(code.redirectURI), \(code.redirectURIParameter), \(code.scope),
        \(code.codeChallenge), \(code.createdAt), \(code.expiresAt), \(code.consumedAt), \(code.grantID), \(code.nonce),
        \(code.authTime), \(code.resources), \(code.verifierDigest), \(code.dpopJKT), \(code.amr?.description), \(code.sid)
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: try row.key(0), clientID: try row.key(1), userID: try row.key(2), redirectURI: try row.string(3),
            redirectURIParameter: try row.optionalString(4), scope: try row.scope(5), codeChallenge: try row.optionalString(6),
            createdAt: try row.date(7), expiresAt: try row.date(8), consumedAt: try row.optionalDate(9),
            grantID: try row.optionalKey(10), nonce: try row.optionalString(11), authTime: try row.optionalDate(12),
            resources: try row.resources(13), verifierDigest: try row.optionalString(14), dpopJKT: try row.optionalString(15),
            amr: try row.optionalString(16).map(AuthenticationMethods.init(storeValue:)), sid: try row.optionalString(17))
    }
}

/// The columns of a grant, in the order ``read(_:)`` reads them; ``stored`` adds `expires_at`,
/// which ``values(_:tokens:)`` binds last.
enum GrantColumns {
    static let list = "id, client_id, user_id, scope, created_at, revoked_at, auth_time, resources, amr, actor, sid"
    static let stored = list + ", expires_at"

    /// The grant's values, with its expiry: when the last of `tokens`, stored with it, expires.
    static func values(_ grant: GrantRecord, tokens: [TokenRecord]) -> SQLStatement {
        """
        \(grant.id), \(grant.clientID), \(grant.userID), \(grant.scope), \(grant.createdAt), \(grant.revokedAt), \
        \(grant.authTime), \(grant.resources), \(grant.amr?.description), \(grant.actor), \(grant.sid), \
        \(grant.expiry(tokens: tokens))
        """
    }

    static func insert(_ grant: GrantRecord, tokens: [TokenRecord]) -> SQLStatement {
        "INSERT INTO grants (\(sql: stored)) VALUES (\(values(grant, tokens: tokens)))"
    }

    @Sendable static func read(_ row: any SQLRow) throws -> GrantRecord {
        GrantRecord(
            id: try row.key(0), clientID: try row.key(1), userID: try row.optionalKey(2), scope: try row.scope(3),
            createdAt: try row.date(4), revokedAt: try row.optionalDate(5), authTime: try row.optionalDate(6),
            resources: try row.resources(7), amr: try row.optionalString(8).map(AuthenticationMethods.init(storeValue:)),
            actor: try row.optionalString(9), sid: try row.optionalString(10))
    }
}

/// The columns of a token, in the order ``read(_:)`` reads them.
public enum TokenColumns {
    static let list = """
        hash, kind, grant_id, client_id, user_id, scope, created_at, expires_at, revoked_at, rotated_at, successor_hash,
        issued_with, audience, jkt, verifier
        """

    static func insert(_ token: TokenRecord) -> SQLStatement {
        """
        INSERT INTO tokens (\(sql: list))
        VALUES (\(token.hash), \(token.kind.rawValue), \(token.grantID), \(token.clientID), \(token.userID), \(token.scope),
            \(token.createdAt), \(token.expiresAt), \(token.revokedAt), \(token.rotatedAt), \(token.successorHash),
            \(token.issuedWith), \(token.audience), \(token.keyThumbprint), \(token.verifierDigest))
        """
    }

    /// The read of every bearer use, introspection and refresh: the token with whether its grant
    /// has ended (``TokenRecord/grantEnded``, docs/threat-model.md RV1, RV2), read by
    /// ``readWithGrantEnded(_:)``. The columns are listed, not `t.*`, so that a column a later
    /// schema step adds does not change the result of a statement PostgreSQL has prepared.
    public static func query(hash: TokenHash) -> SQLStatement { "\(sql: selectByHash)\(hash)" }

    /// ``query(hash:)`` up to the hash, made once: this read runs on every bearer use. The grant's
    /// row is joined once, for whether it was revoked and for how its user signed in (`acr` and
    /// `auth_time` at introspection, RFC 9470 §6.2).
    private static let selectByHash = select(
        userGone: "NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND u.disabled_at IS NULL)", joined: "")

    /// ``query(hash:)`` with the token's user joined, its columns after the token's (``readWithUser(_:)``):
    /// `/userinfo` then needs one round trip, not two. The user is joined once, both for whether
    /// the grant has ended and for the claims.
    public static func queryWithUser(hash: TokenHash) -> SQLStatement { "\(sql: selectWithUserByHash)\(hash)" }

    private static let selectWithUserByHash = select(
        userGone: "(u.id IS NULL OR u.disabled_at IS NOT NULL)", joined: ", " + qualified(UserColumns.list, "u"),
        join: " LEFT JOIN users u ON u.id = t.user_id")

    /// The grant's columns after the token's, in the order ``readWithGrantEnded(_:)`` reads them:
    /// whether it has ended, then how its user signed in.
    private static let grantColumns = ["g.auth_time", "g.amr", "g.actor", "g.sid"]

    /// Where the user's columns start in a row of ``queryWithUser(hash:)``: after the token's, the
    /// grant's end and the grant's columns.
    static let userColumnsStart = list.split(separator: ",").count + 1 + grantColumns.count

    /// The token read up to its hash: the token's columns, whether its grant has ended (revoked, or
    /// `userGone`, SQL true when its user is disabled or deleted), the grant's columns, then `joined`.
    private static func select(userGone: String, joined: String, join: String = "") -> String {
        """
        SELECT \(qualified(list, "t")), (g.revoked_at IS NOT NULL OR (t.user_id IS NOT NULL AND \(userGone))),
            \(grantColumns.joined(separator: ", "))\(joined)
        FROM tokens t LEFT JOIN grants g ON g.id = t.grant_id\(join)
        """ + " WHERE t.hash = "
    }

    /// `columns`, a comma-separated list, each prefixed with `alias`.
    private static func qualified(_ columns: String, _ alias: String) -> String {
        columns.split(separator: ",").map { alias + "." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .joined(separator: ", ")
    }

    /// A row of ``queryWithUser(hash:)``: the token as ``readWithGrantEnded(_:)`` reads it, and its user.
    @Sendable public static func readWithUser(_ row: any SQLRow) throws -> (token: TokenRecord, user: User?) {
        let token = try readWithGrantEnded(row)
        let user = ShiftedRow(row: row, start: userColumnsStart)
        guard try user.optionalString(0) != nil else { return (token, nil) }
        return (token, try UserColumns.read(user))
    }

    /// SQL that is true when the token row `alias` belongs to a revoked grant or to a user who is
    /// disabled or gone (``TokenRecord/grantEnded``).
    static func grantEnded(_ alias: String) -> String {
        """
        (EXISTS (SELECT 1 FROM grants g WHERE g.id = \(alias).grant_id AND g.revoked_at IS NOT NULL)
            OR (\(alias).user_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = \(alias).user_id AND u.disabled_at IS NULL)))
        """
    }

    @Sendable public static func readWithGrantEnded(_ row: any SQLRow) throws -> TokenRecord {
        var token = TokenRecord(
            hash: try row.key(0), kind: try row.value(1), grantID: try row.key(2), clientID: try row.key(3),
            userID: try row.optionalKey(4), scope: try row.scope(5), createdAt: try row.date(6), expiresAt: try row.date(7),
            revokedAt: try row.optionalDate(8), rotatedAt: try row.optionalDate(9), successorHash: try row.optionalKey(10),
            issuedWith: try row.optionalKey(11), audience: try row.resources(12), keyThumbprint: try row.optionalString(13),
            verifierDigest: try row.optionalString(14))
        token.grantEnded = try row.bool(15)
        token.grantAuthTime = try row.optionalDate(16)
        token.grantAMR = try row.optionalString(17).map(AuthenticationMethods.init(storeValue:))
        token.grantActor = try row.optionalString(18)
        token.grantSID = try row.optionalString(19)
        return token
    }
}

/// The columns of `row` from `start` on, read as a row of their own: a joined read's second record.
struct ShiftedRow: SQLRow {
    let row: any SQLRow
    let start: Int

    func optionalString(_ index: Int) throws -> String? { try row.optionalString(start + index) }
    func optionalInt(_ index: Int) throws -> Int? { try row.optionalInt(start + index) }
    func optionalDouble(_ index: Int) throws -> Double? { try row.optionalDouble(start + index) }
    func optionalBool(_ index: Int) throws -> Bool? { try row.optionalBool(start + index) }
}
