import Foundation
import GRDB
import LatchkeyServer

// Pushed authorization requests (RFC 9126).
extension SQLiteStore {
    public func insertPushedRequest(_ request: PushedAuthorizationRequest) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO pushed_authorization_requests (request_uri_hash, client_id, parameters, expires_at)
                    VALUES (?, ?, ?, ?)
                    """,
                arguments: [request.requestURIHash, request.clientID, request.parameters, request.expiresAt.storeValue])
        }
    }

    public func takePushedRequest(hash: String, clientID: ClientID) async throws -> PushedAuthorizationRequest? {
        try await write { db in
            try db.row(
                sql: """
                    DELETE FROM pushed_authorization_requests WHERE request_uri_hash = ? AND client_id = ?
                    RETURNING request_uri_hash, client_id, parameters, expires_at
                    """,
                arguments: [hash, clientID]
            ).map { row in
                PushedAuthorizationRequest(
                    requestURIHash: row["request_uri_hash"], clientID: row["client_id"], parameters: row["parameters"],
                    expiresAt: row.date("expires_at"))
            }
        }
    }
}
