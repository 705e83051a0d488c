import GRDB
import LatchkeyServer

/// The versioned schema of the SQLite store. Plain SQL whose shape a PostgreSQL schema can mirror:
/// text keys, REAL seconds since 1970 for instants, no SQLite-only column types.
enum SQLiteSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("0001_initial") { db in
            try db.execute(sql: """
                CREATE TABLE scopes (
                    name TEXT PRIMARY KEY,
                    description TEXT NOT NULL);
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL UNIQUE,
                    display_name TEXT,
                    password_hash TEXT NOT NULL,
                    created_at REAL NOT NULL);
                CREATE TABLE clients (
                    id TEXT PRIMARY KEY,
                    type TEXT NOT NULL,
                    name TEXT NOT NULL,
                    redirect_uris TEXT NOT NULL,
                    scopes TEXT NOT NULL,
                    logo_uri TEXT,
                    consent_markdown TEXT,
                    privacy_policy_uri TEXT,
                    secret_hash TEXT,
                    owner_user_id TEXT,
                    allow_implicit INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL);
                CREATE TABLE sessions (
                    id_hash TEXT PRIMARY KEY,
                    user_id TEXT,
                    csrf_token TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL);
                CREATE INDEX sessions_user ON sessions(user_id);
                CREATE TABLE pending_authorizations (
                    id TEXT PRIMARY KEY,
                    session_id_hash TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    redirect_uri_parameter TEXT,
                    scope TEXT NOT NULL,
                    state TEXT,
                    code_challenge TEXT,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL);
                CREATE INDEX pending_session ON pending_authorizations(session_id_hash);
                CREATE TABLE consents (
                    user_id TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    updated_at REAL NOT NULL,
                    PRIMARY KEY (user_id, client_id));
                CREATE TABLE grants (
                    id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    user_id TEXT,
                    scope TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    revoked_at REAL);
                CREATE INDEX grants_client ON grants(client_id);
                CREATE INDEX grants_user ON grants(user_id);
                CREATE TABLE authorization_codes (
                    code_hash TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    redirect_uri_parameter TEXT,
                    scope TEXT NOT NULL,
                    code_challenge TEXT,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    consumed_at REAL,
                    grant_id TEXT);
                CREATE TABLE tokens (
                    hash TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    grant_id TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    user_id TEXT,
                    scope TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    revoked_at REAL,
                    rotated_at REAL,
                    successor_hash TEXT,
                    issued_with TEXT);
                CREATE INDEX tokens_grant ON tokens(grant_id);
                CREATE INDEX tokens_issued_with ON tokens(issued_with);
                """)
        }
        migrator.registerMigration("0002_default_scopes") { db in
            for scope in ScopeDefinition.defaultCatalogue {
                try db.execute(
                    sql: "INSERT INTO scopes (name, description) VALUES (?, ?)", arguments: [scope.name, scope.description])
            }
        }
        migrator.registerMigration("0003_grant_lifecycle") { db in
            try db.execute(sql: """
                ALTER TABLE pending_authorizations ADD COLUMN response_type TEXT NOT NULL DEFAULT 'code';
                CREATE INDEX tokens_expiry ON tokens(expires_at);
                CREATE INDEX codes_expiry ON authorization_codes(expires_at);
                CREATE INDEX sessions_expiry ON sessions(expires_at);
                CREATE INDEX pending_expiry ON pending_authorizations(expires_at);
                CREATE INDEX consents_client ON consents(client_id);
                """)
        }
        migrator.registerMigration("0004_hardening") { db in
            try db.execute(sql: """
                ALTER TABLE sessions ADD COLUMN last_seen_at REAL;
                CREATE TABLE throttles (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, ends_at REAL NOT NULL);
                CREATE INDEX throttles_expiry ON throttles(ends_at);
                """)
        }
        migrator.registerMigration("0005_fewer_token_indexes") { db in
            // Its keys (refresh-token hashes) are random, so every access token issued with a
            // refresh token rewrote a random index page; the one query that used it now finds
            // the rows through the grant's index instead.
            try db.execute(sql: "DROP INDEX tokens_issued_with")
        }
        return migrator
    }
}
