import LatchkeyServer
import Logging
import PostgresNIO

/// The versioned schema of the PostgreSQL store: the same tables as the SQLite one (instants as
/// `double precision` seconds since 1970). Migrations run inside one transaction holding an
/// advisory lock, so instances starting together apply each step once.
enum PostgresSchema {
    /// Each entry brings the schema to its index + 1.
    static let migrations: [String] = [
        """
        CREATE TABLE scopes (name text PRIMARY KEY, description text NOT NULL);
        CREATE TABLE users (
            id text PRIMARY KEY, username text NOT NULL UNIQUE, display_name text, password_hash text NOT NULL,
            created_at double precision NOT NULL);
        CREATE TABLE clients (
            id text PRIMARY KEY, type text NOT NULL, name text NOT NULL, redirect_uris text NOT NULL, scopes text NOT NULL,
            logo_uri text, consent_markdown text, privacy_policy_uri text, secret_hash text, owner_user_id text,
            allow_implicit boolean NOT NULL DEFAULT false, created_at double precision NOT NULL);
        CREATE TABLE sessions (
            id_hash text PRIMARY KEY, user_id text, csrf_token text NOT NULL, created_at double precision NOT NULL,
            expires_at double precision NOT NULL);
        CREATE INDEX sessions_user ON sessions(user_id);
        CREATE INDEX sessions_expiry ON sessions(expires_at);
        CREATE TABLE pending_authorizations (
            id text PRIMARY KEY, session_id_hash text NOT NULL, client_id text NOT NULL, redirect_uri text NOT NULL,
            redirect_uri_parameter text, scope text NOT NULL, state text, code_challenge text,
            response_type text NOT NULL DEFAULT 'code', created_at double precision NOT NULL,
            expires_at double precision NOT NULL);
        CREATE INDEX pending_session ON pending_authorizations(session_id_hash);
        CREATE INDEX pending_expiry ON pending_authorizations(expires_at);
        CREATE TABLE consents (
            user_id text NOT NULL, client_id text NOT NULL, scope text NOT NULL, updated_at double precision NOT NULL,
            PRIMARY KEY (user_id, client_id));
        CREATE INDEX consents_client ON consents(client_id);
        CREATE TABLE grants (
            id text PRIMARY KEY, client_id text NOT NULL, user_id text, scope text NOT NULL,
            created_at double precision NOT NULL, revoked_at double precision);
        CREATE INDEX grants_client ON grants(client_id);
        CREATE INDEX grants_user ON grants(user_id);
        CREATE TABLE authorization_codes (
            code_hash text PRIMARY KEY, client_id text NOT NULL, user_id text NOT NULL, redirect_uri text NOT NULL,
            redirect_uri_parameter text, scope text NOT NULL, code_challenge text, created_at double precision NOT NULL,
            expires_at double precision NOT NULL, consumed_at double precision, grant_id text);
        CREATE INDEX codes_expiry ON authorization_codes(expires_at);
        CREATE TABLE tokens (
            hash text PRIMARY KEY, kind text NOT NULL, grant_id text NOT NULL, client_id text NOT NULL, user_id text,
            scope text NOT NULL, created_at double precision NOT NULL, expires_at double precision NOT NULL,
            revoked_at double precision, rotated_at double precision, successor_hash text, issued_with text);
        CREATE INDEX tokens_grant ON tokens(grant_id);
        CREATE INDEX tokens_issued_with ON tokens(issued_with);
        CREATE INDEX tokens_expiry ON tokens(expires_at);
        CREATE INDEX tokens_user_client ON tokens(user_id, client_id);
        """,
        """
        ALTER TABLE sessions ADD COLUMN last_seen_at double precision;
        CREATE TABLE throttles (key text PRIMARY KEY, failures integer NOT NULL, ends_at double precision NOT NULL);
        CREATE INDEX throttles_expiry ON throttles(ends_at)
        """,
        // Random keys: every access token issued with a refresh token rewrote a random index page.
        "DROP INDEX IF EXISTS tokens_issued_with",
    ]

    /// Applies the missing migrations. - Returns: the schema version now.
    /// - Throws: ``StoreError/schemaTooNew(_:)`` for a schema newer than this build knows.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            // Waiting for another instance's migration may take longer than a request may.
            try await connection.query("SET LOCAL lock_timeout = '60s'", logger: logger)
            try await connection.query("SET LOCAL statement_timeout = '60s'", logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(74617)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS latchkey_schema (version integer NOT NULL)", logger: logger)
            var version = 0
            for try await value in try await connection.query("SELECT version FROM latchkey_schema", logger: logger)
                .decode(Int.self)
            {
                version = value
            }
            guard version <= migrations.count else {
                throw StoreError.schemaTooNew(
                    "The database has schema version \(version); this Latchkey knows up to \(migrations.count). Upgrade Latchkey.")
            }
            if version < migrations.count {
                for step in migrations[version...] {
                    for statement in step.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                        try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: logger)
                    }
                }
                try await connection.query("DELETE FROM latchkey_schema", logger: logger)
                try await connection.query("INSERT INTO latchkey_schema (version) VALUES (\(migrations.count))", logger: logger)
                // The default catalogue, once, with the first schema.
                if version == 0 {
                    for scope in ScopeDefinition.defaultCatalogue {
                        try await connection.query(
                            "INSERT INTO scopes (name, description) VALUES (\(scope.name), \(scope.description))", logger: logger)
                    }
                }
            }
            return migrations.count
        }
    }
}
