import Foundation
import LatchkeyCore

// Initial access tokens for dynamic client registration (RFC 7591), pushed authorization
// requests (RFC 9126), and the registered protected resources (RFC 8707).
extension SQLDatabase {
    public func insertInitialAccessToken(_ token: InitialAccessToken) async throws {
        try await insert(
            """
            INSERT INTO initial_access_tokens (token_hash, id, created_at, expires_at)
            VALUES (\(token.tokenHash), \(token.id), \(token.createdAt), \(token.expiresAt))
            """)
    }

    public func initialAccessToken(hash: String) async throws -> InitialAccessToken? {
        try await row(
            "SELECT id, token_hash, created_at, expires_at FROM initial_access_tokens WHERE token_hash = \(hash)",
            Self.initialAccessToken)
    }

    public func initialAccessTokens() async throws -> [InitialAccessToken] {
        try await rows(
            "SELECT id, token_hash, created_at, expires_at FROM initial_access_tokens ORDER BY created_at DESC, id",
            Self.initialAccessToken)
    }

    public func deleteInitialAccessToken(id: String) async throws -> Bool {
        try await run("DELETE FROM initial_access_tokens WHERE id = \(id)") > 0
    }

    @Sendable private static func initialAccessToken(_ row: any SQLRow) throws -> InitialAccessToken {
        InitialAccessToken(
            id: try row.string(0), tokenHash: try row.string(1), createdAt: try row.date(2), expiresAt: try row.date(3))
    }

    // MARK: Pushed authorization requests

    public func insertPushedRequest(_ request: PushedAuthorizationRequest) async throws {
        try await insert(
            """
            INSERT INTO pushed_authorization_requests (request_uri_hash, client_id, parameters, expires_at)
            VALUES (\(request.requestURIHash), \(request.clientID), \(request.parameters), \(request.expiresAt))
            """)
    }

    public func takePushedRequest(hash: String, clientID: ClientID) async throws -> PushedAuthorizationRequest? {
        try await returning(
            """
            DELETE FROM pushed_authorization_requests WHERE request_uri_hash = \(hash) AND client_id = \(clientID)
            RETURNING request_uri_hash, client_id, parameters, expires_at
            """
        ) { row in
            PushedAuthorizationRequest(
                requestURIHash: try row.string(0), clientID: try row.key(1), parameters: try row.string(2),
                expiresAt: try row.date(3))
        }.first
    }

    // MARK: Protected resources

    public func insertResource(_ resource: ProtectedResource) async throws {
        try await insert(
            """
            INSERT INTO resources (\(sql: Self.resourceColumns))
            VALUES (\(resource.uri), \(resource.name), \(resource.scopes), \(resource.tokenFormat.rawValue),
                \(resource.accessTokenLifetime), \(resource.createdAt), \(resource.tokenSigningAlgorithm.rawValue))
            """)
    }

    public func resources(uris: ResourceSet) async throws -> [ProtectedResource] {
        // Only what can be a resource indicator is looked up; nothing else names a row.
        let indicators = uris.filter(ResourceSet.isValidIndicator)
        guard var list = indicators.first.map({ first -> SQLStatement in "\(first)" }) else { return [] }
        for uri in indicators.dropFirst() { list = list.appending(", \(uri)") }
        return try await rows(
            "SELECT \(sql: Self.resourceColumns) FROM resources WHERE uri IN (\(list)) ORDER BY uri", Self.resource)
    }

    public func resources() async throws -> [ProtectedResource] {
        try await rows("SELECT \(sql: Self.resourceColumns) FROM resources ORDER BY uri", Self.resource)
    }

    public func deleteResource(uri: String) async throws -> Bool {
        guard ResourceSet.isValidIndicator(uri) else { return false }
        return try await run("DELETE FROM resources WHERE uri = \(uri)") > 0
    }

    private static var resourceColumns: String {
        "uri, name, scopes, token_format, access_token_lifetime, created_at, token_signing_alg"
    }

    @Sendable private static func resource(_ row: any SQLRow) throws -> ProtectedResource {
        ProtectedResource(
            uri: try row.string(0), name: try row.string(1), scopes: try row.scope(2), tokenFormat: try row.value(3),
            accessTokenLifetime: try row.optionalInt(4), tokenSigningAlgorithm: try row.value(6), createdAt: try row.date(5))
    }
}
