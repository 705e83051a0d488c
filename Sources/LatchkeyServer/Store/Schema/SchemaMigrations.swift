/// The two SQL dialects the stores speak.
public enum SQLDialect: Sendable {
    case sqlite, postgres
}

/// One step of the store schema, the same for every store: the SQLite and PostgreSQL stores apply
/// the same list, under the same identifiers, so their tables, columns and indexes cannot drift
/// apart (the schema comparison test checks that they do not).
///
/// The statements are plain SQL with three words written for the dialect: `{instant}` (seconds
/// since 1970: `REAL` / `double precision`), `{boolean}` (`INTEGER` / `boolean`) and `{false}`
/// (`0` / `false`). Everything else must mean the same in both.
public struct SchemaMigration: Sendable {
    /// The step's number, from 1, in the order the steps are applied.
    public let number: Int
    /// What the step does, in snake case.
    public let name: String
    private let statements: [String]

    init(_ number: Int, _ name: String, _ statements: [String]) {
        self.number = number
        self.name = name
        self.statements = statements
    }

    /// `0001_initial`: how a store records that the step was applied.
    public var identifier: String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// The step's statements, one per element, in `dialect`.
    public func statements(in dialect: SQLDialect) -> [String] {
        let words: [(String, String)] =
            switch dialect {
            case .sqlite: [("{instant}", "REAL"), ("{boolean}", "INTEGER"), ("{false}", "0")]
            case .postgres: [("{instant}", "double precision"), ("{boolean}", "boolean"), ("{false}", "false")]
            }
        return statements.map { statement in
            words.reduce(statement) { text, word in text.replacingOccurrences(of: word.0, with: word.1) }
        }
    }
}

extension SchemaMigration {
    /// Every step, oldest first. Append only: a released step never changes, since stores in the
    /// field have applied it.
    public static let all: [SchemaMigration] = [
        SchemaMigration(
            1, "initial",
            [
                "CREATE TABLE scopes (name TEXT PRIMARY KEY, description TEXT NOT NULL)",
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, display_name TEXT, password_hash TEXT NOT NULL,
                    created_at {instant} NOT NULL)
                """,
                """
                CREATE TABLE clients (
                    id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL, redirect_uris TEXT NOT NULL,
                    scopes TEXT NOT NULL, logo_uri TEXT, consent_markdown TEXT, privacy_policy_uri TEXT, secret_hash TEXT,
                    owner_user_id TEXT, allow_implicit {boolean} NOT NULL DEFAULT {false}, created_at {instant} NOT NULL)
                """,
                """
                CREATE TABLE sessions (
                    id_hash TEXT PRIMARY KEY, user_id TEXT, csrf_token TEXT NOT NULL, created_at {instant} NOT NULL,
                    expires_at {instant} NOT NULL)
                """,
                "CREATE INDEX sessions_user ON sessions(user_id)",
                """
                CREATE TABLE pending_authorizations (
                    id TEXT PRIMARY KEY, session_id_hash TEXT NOT NULL, client_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
                    redirect_uri_parameter TEXT, scope TEXT NOT NULL, state TEXT, code_challenge TEXT,
                    created_at {instant} NOT NULL, expires_at {instant} NOT NULL)
                """,
                "CREATE INDEX pending_session ON pending_authorizations(session_id_hash)",
                """
                CREATE TABLE consents (
                    user_id TEXT NOT NULL, client_id TEXT NOT NULL, scope TEXT NOT NULL, updated_at {instant} NOT NULL,
                    PRIMARY KEY (user_id, client_id))
                """,
                """
                CREATE TABLE grants (
                    id TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT, scope TEXT NOT NULL,
                    created_at {instant} NOT NULL, revoked_at {instant})
                """,
                "CREATE INDEX grants_client ON grants(client_id)",
                "CREATE INDEX grants_user ON grants(user_id)",
                """
                CREATE TABLE authorization_codes (
                    code_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
                    redirect_uri_parameter TEXT, scope TEXT NOT NULL, code_challenge TEXT, created_at {instant} NOT NULL,
                    expires_at {instant} NOT NULL, consumed_at {instant}, grant_id TEXT)
                """,
                """
                CREATE TABLE tokens (
                    hash TEXT PRIMARY KEY, kind TEXT NOT NULL, grant_id TEXT NOT NULL, client_id TEXT NOT NULL, user_id TEXT,
                    scope TEXT NOT NULL, created_at {instant} NOT NULL, expires_at {instant} NOT NULL, revoked_at {instant},
                    rotated_at {instant}, successor_hash TEXT, issued_with TEXT)
                """,
                "CREATE INDEX tokens_grant ON tokens(grant_id)",
                "CREATE INDEX tokens_issued_with ON tokens(issued_with)",
            ]),
        SchemaMigration(
            2, "default_scopes",
            ScopeDefinition.defaultCatalogue.map { scope in
                "INSERT INTO scopes (name, description) VALUES (\(sqlLiteral(scope.name)), \(sqlLiteral(scope.description)))"
            }),
        SchemaMigration(
            3, "grant_lifecycle",
            [
                "ALTER TABLE pending_authorizations ADD COLUMN response_type TEXT NOT NULL DEFAULT 'code'",
                "CREATE INDEX tokens_expiry ON tokens(expires_at)",
                "CREATE INDEX codes_expiry ON authorization_codes(expires_at)",
                "CREATE INDEX sessions_expiry ON sessions(expires_at)",
                "CREATE INDEX pending_expiry ON pending_authorizations(expires_at)",
                "CREATE INDEX consents_client ON consents(client_id)",
            ]),
        SchemaMigration(
            4, "hardening",
            [
                "ALTER TABLE sessions ADD COLUMN last_seen_at {instant}",
                "CREATE TABLE throttles (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, ends_at {instant} NOT NULL)",
                "CREATE INDEX throttles_expiry ON throttles(ends_at)",
            ]),
        // Its keys (refresh-token hashes) are random, so every access token issued with a refresh
        // token rewrote a random index page; the one query that used it goes through the grant's
        // index instead.
        SchemaMigration(5, "fewer_token_indexes", ["DROP INDEX IF EXISTS tokens_issued_with"]),
        // Disconnecting an app (revoking everything a user granted a client) finds the tokens by
        // user and client. PostgreSQL stores made before the one list of steps have it already.
        SchemaMigration(
            6, "tokens_by_user_and_client",
            [
                "CREATE INDEX IF NOT EXISTS tokens_user_client ON tokens(user_id, client_id)"
            ]),
        // The admin console and API: a user's role and whether the account is disabled, apps that
        // skip the consent page (first-party apps), per-app token lifetimes, and the admin API's scope.
        SchemaMigration(
            7, "roles_and_first_party",
            [
                "ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'none'",
                "ALTER TABLE users ADD COLUMN disabled_at {instant}",
                "ALTER TABLE clients ADD COLUMN first_party {boolean} NOT NULL DEFAULT {false}",
                // Per-client token lifetimes in seconds; NULL means the server's default.
                "ALTER TABLE clients ADD COLUMN access_token_lifetime INTEGER",
                "ALTER TABLE clients ADD COLUMN refresh_token_lifetime INTEGER",
                // The admin API's scope; a store that already had a scope of that name keeps it.
                """
                INSERT INTO scopes (name, description) VALUES ('latchkey:admin', 'Manage the apps, users and scopes of this Latchkey (admin API)')
                ON CONFLICT (name) DO NOTHING
                """,
            ]),
        // The admin console's Activity page: audit events kept for a number of days. `details`
        // holds the event's other fields as one JSON object.
        SchemaMigration(
            8, "audit_events",
            [
                """
                CREATE TABLE audit_events (
                    id TEXT PRIMARY KEY, at {instant} NOT NULL, event TEXT NOT NULL, actor TEXT, user_id TEXT, client_id TEXT,
                    details TEXT NOT NULL)
                """,
                "CREATE INDEX audit_events_at ON audit_events(at)",
            ]),
        // OpenID Connect: users' email and when their profile changed; how each client's ID tokens
        // are signed and where its logout may return; the request's nonce and sign-in demands
        // (prompt, max_age) carried from the authorization request to the code and the grant; and
        // the signing keys, whose private halves are sealed under a key the store never holds.
        SchemaMigration(
            9, "openid_connect",
            [
                "ALTER TABLE users ADD COLUMN email TEXT",
                "ALTER TABLE users ADD COLUMN email_verified {boolean} NOT NULL DEFAULT {false}",
                "ALTER TABLE users ADD COLUMN updated_at {instant}",
                "ALTER TABLE clients ADD COLUMN id_token_signed_response_alg TEXT NOT NULL DEFAULT 'RS256'",
                "ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE pending_authorizations ADD COLUMN nonce TEXT",
                "ALTER TABLE pending_authorizations ADD COLUMN authenticated_after {instant}",
                "ALTER TABLE pending_authorizations ADD COLUMN prompt_consent {boolean} NOT NULL DEFAULT {false}",
                "ALTER TABLE pending_authorizations ADD COLUMN hinted_subject TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN nonce TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN auth_time {instant}",
                "ALTER TABLE grants ADD COLUMN auth_time {instant}",
                // `published_until` is NULL while the key is the newest of its algorithm.
                """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY, algorithm TEXT NOT NULL, public_jwk TEXT NOT NULL, sealed_private_key TEXT NOT NULL,
                    created_at {instant} NOT NULL, activates_at {instant} NOT NULL, published_until {instant})
                """,
                """
                INSERT INTO scopes (name, description) VALUES ('openid', 'Sign you in to the app with your account here')
                ON CONFLICT (name) DO NOTHING
                """,
                """
                INSERT INTO scopes (name, description) VALUES ('email', 'See your email address')
                ON CONFLICT (name) DO NOTHING
                """,
            ]),
        // Resource indicators (RFC 8707): the registered resources and the format of their access
        // tokens; the resources a request named, carried to its code, grant and remembered
        // consent; each token's audience. Space-separated URIs, '' for none.
        SchemaMigration(
            10, "resource_indicators",
            [
                """
                CREATE TABLE resources (
                    uri TEXT PRIMARY KEY, name TEXT NOT NULL, scopes TEXT NOT NULL, token_format TEXT NOT NULL,
                    access_token_lifetime INTEGER, created_at {instant} NOT NULL)
                """,
                "ALTER TABLE pending_authorizations ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE authorization_codes ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE grants ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE consents ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE tokens ADD COLUMN audience TEXT NOT NULL DEFAULT ''",
            ]),
        // Clients that register themselves (RFC 7591, RFC 7592) or are known by their metadata
        // document: who registered each client, the hash of its registration access token, when
        // a cached metadata document expires; and the initial access tokens that let a developer
        // register when registration is not open.
        SchemaMigration(
            11, "client_registration",
            [
                "ALTER TABLE clients ADD COLUMN registration TEXT NOT NULL DEFAULT 'admin'",
                "ALTER TABLE clients ADD COLUMN registration_access_token_hash TEXT",
                "ALTER TABLE clients ADD COLUMN metadata_expires_at {instant}",
                """
                CREATE TABLE initial_access_tokens (
                    token_hash TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, created_at {instant} NOT NULL,
                    expires_at {instant} NOT NULL)
                """,
            ]),
        // Pushed authorization requests (RFC 9126): the pushed parameters until the browser brings
        // the request_uri (kept by hash), and the clients that must push.
        SchemaMigration(
            12, "pushed_authorization_requests",
            [
                """
                CREATE TABLE pushed_authorization_requests (
                    request_uri_hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, parameters TEXT NOT NULL,
                    expires_at {instant} NOT NULL)
                """,
                "ALTER TABLE clients ADD COLUMN require_pushed_authorization_requests {boolean} NOT NULL DEFAULT {false}",
            ]),
        // The device authorization grant (RFC 8628): requests by device code hash, found by user
        // code hash when the user types it; the browser's pending request names its device code;
        // the clients allowed the grant.
        SchemaMigration(
            13, "device_authorizations",
            [
                """
                CREATE TABLE device_authorizations (
                    device_code_hash TEXT PRIMARY KEY, user_code_hash TEXT NOT NULL UNIQUE, client_id TEXT NOT NULL,
                    scope TEXT NOT NULL, resources TEXT NOT NULL, status TEXT NOT NULL, claimed_by TEXT,
                    poll_interval INTEGER NOT NULL, last_polled_at {instant}, created_at {instant} NOT NULL,
                    expires_at {instant} NOT NULL)
                """,
                "ALTER TABLE pending_authorizations ADD COLUMN device_code_hash TEXT",
                "ALTER TABLE clients ADD COLUMN allow_device_code {boolean} NOT NULL DEFAULT {false}",
            ]),
        // DPoP (RFC 9449): the key a token is bound to; the proofs seen (by hash of key and jti)
        // until they are too old to be accepted anyway; the server's nonces while they are good.
        SchemaMigration(
            14, "dpop",
            [
                "ALTER TABLE tokens ADD COLUMN jkt TEXT",
                "CREATE TABLE dpop_proofs (proof_hash TEXT PRIMARY KEY, expires_at {instant} NOT NULL)",
                "CREATE TABLE dpop_nonces (nonce_hash TEXT PRIMARY KEY, expires_at {instant} NOT NULL)",
            ]),
        // Split tokens (docs/design.md §6): codes and tokens issued from now on are keyed by their
        // time-ordered selector and hold their verifier's SHA-256; rows of tokens issued before keep
        // `verifier` NULL and their key, the SHA-256 of the whole token, so they keep working.
        SchemaMigration(
            15, "split_tokens",
            [
                "ALTER TABLE tokens ADD COLUMN verifier TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN verifier TEXT",
            ]),
        // What unauthenticated requests ask of the clients table, answered from an index rather
        // than by reading every client: whether a browser client may use the implicit grant (the
        // metadata document), how many clients registered each way (the limit on metadata documents).
        SchemaMigration(
            16, "client_indexes",
            [
                "CREATE INDEX clients_allowing_implicit ON clients (allow_implicit, type)",
                "CREATE INDEX clients_by_registration ON clients (registration)",
            ]),
        // A count of the revocations of a user's access (AccessRevocation): a code or implicit
        // token is stored only if it has not moved since the authorization request read it
        // (docs/threat-model.md RV23).
        SchemaMigration(17, "access_epoch", ["ALTER TABLE users ADD COLUMN access_epoch INTEGER NOT NULL DEFAULT 0"]),
        // A client's grants as one list, `grant_types` as RFC 7591 names it, in place of a column
        // per grant: what each kind of client always had, and the two grants that were flags.
        SchemaMigration(
            18, "client_grant_types",
            [
                "ALTER TABLE clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT ''",
                """
                UPDATE clients SET grant_types =
                    (CASE WHEN type = 'service' THEN 'client_credentials' ELSE 'authorization_code' END)
                    || (CASE WHEN allow_implicit THEN ' implicit' ELSE '' END)
                    || (CASE WHEN type = 'service' THEN '' ELSE ' refresh_token' END)
                    || (CASE WHEN allow_device_code THEN ' \(GrantTypes.deviceCode)' ELSE '' END)
                """,
                "DROP INDEX clients_allowing_implicit",
                "CREATE INDEX clients_by_type ON clients (type)",
                "ALTER TABLE clients DROP COLUMN allow_implicit",
                "ALTER TABLE clients DROP COLUMN allow_device_code",
            ]),
        // E-mail waiting to go out (MailOutboxStore): kept until the relay took it or Latchkey gave
        // up, then kept without its content as activity. `sealed_content` is sealed with the
        // key-encryption key, since a message may hold a link that signs someone in.
        SchemaMigration(
            19, "mail_outbox",
            [
                """
                CREATE TABLE mail_outbox (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    sealed_content TEXT NOT NULL,
                    message_id TEXT NOT NULL,
                    created_at {instant} NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at {instant} NOT NULL,
                    leased_until {instant},
                    sent_at {instant},
                    failed_at {instant},
                    finished_at {instant},
                    last_error TEXT
                )
                """,
                "CREATE INDEX mail_outbox_due ON mail_outbox (finished_at, next_attempt_at)",
            ]),
        // Links Latchkey e-mails (AccountLinkStore), kept by the SHA-256 of their secret, and the
        // mark on an account a person made themselves that it must verify its address first.
        SchemaMigration(
            20, "account_links",
            [
                """
                CREATE TABLE account_links (
                    hash TEXT PRIMARY KEY,
                    purpose TEXT NOT NULL,
                    user_id TEXT,
                    email TEXT NOT NULL,
                    pending_request_id TEXT,
                    created_at {instant} NOT NULL,
                    expires_at {instant} NOT NULL,
                    used_at {instant}
                )
                """,
                "CREATE INDEX account_links_by_user ON account_links (user_id, purpose)",
                "ALTER TABLE users ADD COLUMN must_verify_email {boolean} NOT NULL DEFAULT {false}",
            ]),
        // What a running server was started with (HousekeepingStore.recordServerFact), for the
        // admin commands that build what it would: `latchkey users invite` reads the issuer.
        SchemaMigration(
            21, "server_facts",
            ["CREATE TABLE server_facts (name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at {instant} NOT NULL)"]),
        // What signs a resource's JWT access tokens: RS256, as before, unless it chose ES256.
        SchemaMigration(
            22, "resource_signing_alg", ["ALTER TABLE resources ADD COLUMN token_signing_alg TEXT NOT NULL DEFAULT 'RS256'"]),
        // `dpop_jkt` (RFC 9449 §10): the DPoP key an authorization request bound its code to.
        SchemaMigration(
            23, "dpop_jkt",
            [
                "ALTER TABLE pending_authorizations ADD COLUMN dpop_jkt TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN dpop_jkt TEXT",
            ]),
        // Second factors (SecondFactorStore), how each session signed in (`amr`, RFC 8176) and
        // what a request asked of it (`acr_values`), carried to codes and grants for ID tokens.
        SchemaMigration(
            24, "second_factors",
            [
                """
                CREATE TABLE second_factors (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    name TEXT NOT NULL,
                    secret TEXT NOT NULL,
                    last_step BIGINT NOT NULL DEFAULT 0,
                    created_at {instant} NOT NULL,
                    confirmed_at {instant},
                    last_used_at {instant},
                    used_at {instant}
                )
                """,
                "CREATE INDEX second_factors_by_user ON second_factors (user_id, kind)",
                "ALTER TABLE users ADD COLUMN second_factor_required {boolean} NOT NULL DEFAULT {false}",
                "ALTER TABLE sessions ADD COLUMN amr TEXT",
                "ALTER TABLE sessions ADD COLUMN second_factor_user_id TEXT",
                "ALTER TABLE pending_authorizations ADD COLUMN required_acr TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN amr TEXT",
                "ALTER TABLE grants ADD COLUMN amr TEXT",
            ]),
        // Passkeys (PasskeyStore): WebAuthn credentials by their id, and the single-use challenges
        // issued to a browser session; and sessions found by the user who owes a second step.
        SchemaMigration(
            25, "passkeys",
            [
                """
                CREATE TABLE passkeys (
                    credential_id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    public_key TEXT NOT NULL,
                    sign_count BIGINT NOT NULL DEFAULT 0,
                    backup_eligible {boolean} NOT NULL DEFAULT {false},
                    created_at {instant} NOT NULL,
                    last_used_at {instant}
                )
                """,
                "CREATE INDEX passkeys_by_user ON passkeys (user_id)",
                // Every password change, reset, disable and delete ends the sessions that owe a step.
                "CREATE INDEX sessions_by_second_factor_user ON sessions (second_factor_user_id)",
                """
                CREATE TABLE passkey_challenges (
                    hash TEXT PRIMARY KEY,
                    session_id_hash TEXT NOT NULL,
                    purpose TEXT NOT NULL,
                    user_id TEXT,
                    expires_at {instant} NOT NULL
                )
                """,
            ]),
        // Upstream identity providers (FederationStore): the providers, the accounts linked to
        // them, and the round trips under way, found by their state's hash.
        SchemaMigration(
            26, "identity_providers",
            [
                """
                CREATE TABLE identity_providers (
                    name TEXT PRIMARY KEY,
                    display_name TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    issuer TEXT,
                    client_id TEXT NOT NULL,
                    client_secret TEXT,
                    scope TEXT NOT NULL,
                    authorization_endpoint TEXT,
                    token_endpoint TEXT,
                    userinfo_endpoint TEXT,
                    subject_claim TEXT NOT NULL,
                    email_claim TEXT NOT NULL,
                    email_verified_claim TEXT NOT NULL,
                    name_claim TEXT NOT NULL,
                    username_claim TEXT NOT NULL,
                    creates_accounts {boolean} NOT NULL,
                    allowed_email_domains TEXT NOT NULL,
                    links_verified_email {boolean} NOT NULL,
                    updates_profile {boolean} NOT NULL,
                    enabled {boolean} NOT NULL,
                    created_at {instant} NOT NULL
                )
                """,
                """
                CREATE TABLE federated_identities (
                    provider TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    email TEXT,
                    created_at {instant} NOT NULL,
                    last_used_at {instant},
                    PRIMARY KEY (provider, subject)
                )
                """,
                "CREATE INDEX federated_identities_by_user ON federated_identities (user_id)",
                """
                CREATE TABLE federation_requests (
                    state_hash TEXT PRIMARY KEY,
                    session_id_hash TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    nonce TEXT,
                    code_verifier TEXT NOT NULL,
                    pending_id TEXT,
                    next TEXT,
                    linking_user_id TEXT,
                    authenticated_after {instant},
                    expires_at {instant} NOT NULL
                )
                """,
            ]),
        // Clients that authenticate with signed assertions (RFC 7523 §2.2) instead of a secret,
        // and the assertions already used, kept (by hash) until they expire so that one replayed
        // at any instance is refused.
        SchemaMigration(
            27, "client_assertions",
            [
                "ALTER TABLE clients ADD COLUMN jwks TEXT",
                "ALTER TABLE clients ADD COLUMN jwks_uri TEXT",
                "CREATE TABLE used_assertions (assertion_hash TEXT PRIMARY KEY, expires_at {instant} NOT NULL)",
            ]),
        // Token exchange (RFC 8693): the `act` claim of a grant made by an exchange with an actor.
        SchemaMigration(28, "token_exchange", ["ALTER TABLE grants ADD COLUMN actor TEXT"]),
        // response_mode (form_post): how a pending request's answer goes back.
        SchemaMigration(29, "response_mode", ["ALTER TABLE pending_authorizations ADD COLUMN response_mode TEXT"]),
        // The JWT bearer grant (RFC 7523 §2.1) and identity assertion grants: the providers whose
        // signed assertions about their users the token endpoint accepts.
        SchemaMigration(
            30, "assertion_issuers",
            ["ALTER TABLE identity_providers ADD COLUMN accepts_assertions {boolean} NOT NULL DEFAULT {false}"]),
        // Back-channel logout (OpenID Connect Back-Channel Logout 1.0): where a web app is told,
        // the session a code and its grant came from, and the logout tokens waiting to go, one
        // row per app and session (or per app and user, when the user's access ended), kept until
        // delivered or given up.
        SchemaMigration(
            31, "backchannel_logout",
            [
                "ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT",
                "ALTER TABLE sessions ADD COLUMN sid TEXT",
                "ALTER TABLE authorization_codes ADD COLUMN sid TEXT",
                "ALTER TABLE grants ADD COLUMN sid TEXT",
                "CREATE INDEX grants_sid ON grants (sid)",
                """
                CREATE TABLE logout_deliveries (
                    id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    sid TEXT NOT NULL,
                    created_at {instant} NOT NULL,
                    next_attempt_at {instant} NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    leased_until {instant},
                    finished_at {instant},
                    delivered {boolean} NOT NULL DEFAULT {false},
                    last_error TEXT
                )
                """,
                "CREATE INDEX logout_deliveries_due ON logout_deliveries (finished_at, next_attempt_at)",
            ]),
        // Grants were never deleted: every client-credentials token left one behind for good. A
        // grant's expiry is when its last token expires, as far as the store knows (set when it
        // is stored, moved on by the purge when a rotation outlived it), and the purge deletes it
        // once no token is left and no live session still names it (ExpiryPurge). The grants
        // stored before start with their creation time; the purge moves on the ones still alive.
        SchemaMigration(
            32, "grant_expiry",
            [
                "ALTER TABLE grants ADD COLUMN expires_at {instant}",
                "UPDATE grants SET expires_at = created_at",
                "CREATE INDEX grants_expiry ON grants (expires_at)",
                "CREATE INDEX sessions_sid ON sessions (sid)",
            ]),
    ]

    /// A SQL string literal (quotes doubled), for the constant text of data steps.
    private static func sqlLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
