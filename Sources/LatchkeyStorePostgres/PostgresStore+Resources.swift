import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// The registered protected resources (RFC 8707).
extension PostgresStore {
    public func insertResource(_ resource: ProtectedResource) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO resources (uri, name, scopes, token_format, access_token_lifetime, created_at)
                VALUES (\(resource.uri), \(resource.name), \(resource.scopes.description), \(resource.tokenFormat.rawValue),
                    \(resource.accessTokenLifetime), \(resource.createdAt.timeIntervalSince1970))
                """)
        }
    }

    public func resources(uris: ResourceSet) async throws -> [ProtectedResource] {
        try await perform { client in
            try await client.query("SELECT * FROM resources WHERE uri = ANY(\(uris.uris)) ORDER BY uri").map(Self.resource)
        }
    }

    public func resources() async throws -> [ProtectedResource] {
        try await perform { client in try await client.query("SELECT * FROM resources ORDER BY uri").map(Self.resource) }
    }

    public func deleteResource(uri: String) async throws -> Bool {
        try await perform { client in
            try await client.query("DELETE FROM resources WHERE uri = \(uri) RETURNING uri").count() > 0
        }
    }

    static func resource(_ row: PostgresRandomAccessRow) throws -> ProtectedResource {
        ProtectedResource(
            uri: try row.string("uri"), name: try row.string("name"), scopes: try row.scope("scopes"),
            tokenFormat: AccessTokenFormat(rawValue: try row.string("token_format")) ?? .opaque,
            accessTokenLifetime: try row["access_token_lifetime"].decode(Int?.self),
            createdAt: try row.date("created_at"))
    }
}
