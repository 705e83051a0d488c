import Foundation
import LatchkeyServer
import PostgresNIO

// Pushed authorization requests (RFC 9126).
extension PostgresStore {
    public func insertPushedRequest(_ request: PushedAuthorizationRequest) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO pushed_authorization_requests (request_uri_hash, client_id, parameters, expires_at)
                VALUES (\(request.requestURIHash), \(request.clientID), \(request.parameters),
                    \(request.expiresAt.timeIntervalSince1970))
                """)
        }
    }

    public func takePushedRequest(hash: String, clientID: ClientID) async throws -> PushedAuthorizationRequest? {
        try await perform { client in
            try await client.query(
                """
                DELETE FROM pushed_authorization_requests WHERE request_uri_hash = \(hash) AND client_id = \(clientID)
                RETURNING request_uri_hash, client_id, parameters, expires_at
                """
            ).map { row in
                PushedAuthorizationRequest(
                    requestURIHash: try row.string("request_uri_hash"),
                    clientID: try ClientID(rawValue: row.string("client_id")), parameters: try row.string("parameters"),
                    expiresAt: try row.date("expires_at"))
            }.first
        }
    }
}
