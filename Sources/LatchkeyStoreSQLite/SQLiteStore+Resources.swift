import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

// The registered protected resources (RFC 8707).
extension SQLiteStore {
    public func insertResource(_ resource: ProtectedResource) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO resources (uri, name, scopes, token_format, access_token_lifetime, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    resource.uri, resource.name, resource.scopes.description, resource.tokenFormat.rawValue,
                    resource.accessTokenLifetime, resource.createdAt.storeValue,
                ])
        }
    }

    public func resources(uris: ResourceSet) async throws -> [ProtectedResource] {
        let placeholders = Array(repeating: "?", count: uris.count).joined(separator: ", ")
        return try await read { db in
            try db.rows(
                sql: "SELECT * FROM resources WHERE uri IN (\(placeholders)) ORDER BY uri",
                arguments: StatementArguments(uris.uris)
            ).map(Self.resource)
        }
    }

    public func resources() async throws -> [ProtectedResource] {
        try await read { db in try db.rows(sql: "SELECT * FROM resources ORDER BY uri").map(Self.resource) }
    }

    public func deleteResource(uri: String) async throws -> Bool {
        try await write { db in
            try db.run(sql: "DELETE FROM resources WHERE uri = ?", arguments: [uri])
            return db.changesCount > 0
        }
    }

    private static func resource(_ row: Row) -> ProtectedResource {
        ProtectedResource(
            uri: row["uri"], name: row["name"], scopes: row.scope("scopes"),
            tokenFormat: AccessTokenFormat(rawValue: row["token_format"]) ?? .opaque,
            accessTokenLifetime: row["access_token_lifetime"], createdAt: row.date("created_at"))
    }
}
