import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

// Device authorization requests (RFC 8628).
extension SQLiteStore {
    public func insertDeviceAuthorization(_ authorization: DeviceAuthorization) async throws {
        try await write { db in
            try db.run(
                sql: """
                    INSERT INTO device_authorizations (device_code_hash, user_code_hash, client_id, scope, resources, status,
                        poll_interval, last_polled_at, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    authorization.deviceCodeHash, authorization.userCodeHash, authorization.clientID,
                    authorization.scope.description, authorization.resources.description, authorization.status.rawValue,
                    authorization.interval, authorization.lastPolledAt?.storeValue, authorization.createdAt.storeValue,
                    authorization.expiresAt.storeValue,
                ])
        }
    }

    public func deviceAuthorization(deviceCodeHash: String) async throws -> DeviceAuthorization? {
        try await read { db in
            try db.row(sql: "SELECT * FROM device_authorizations WHERE device_code_hash = ?", arguments: [deviceCodeHash])
                .map(Self.deviceAuthorization)
        }
    }

    public func claimDeviceAuthorization(userCodeHash: String, by sessionIDHash: SessionIDHash, at: Date) async throws
        -> DeviceAuthorization?
    {
        try await write { db in
            try db.row(
                sql: """
                    UPDATE device_authorizations SET status = 'claimed', claimed_by = ?
                    WHERE user_code_hash = ? AND expires_at > ?
                        AND (status = 'pending' OR (status = 'claimed' AND claimed_by = ?))
                    RETURNING *
                    """, arguments: [sessionIDHash, userCodeHash, at.storeValue, sessionIDHash]
            ).map(Self.deviceAuthorization)
        }
    }

    public func settleDeviceAuthorization(deviceCodeHash: String, status: DeviceAuthorization.Status) async throws -> Bool {
        try await write { db in
            try db.run(
                sql: "UPDATE device_authorizations SET status = ? WHERE device_code_hash = ? AND status = 'claimed'",
                arguments: [status.rawValue, deviceCodeHash])
            return db.changesCount == 1
        }
    }

    public func recordDevicePoll(deviceCodeHash: String, at: Date, interval: Int) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE device_authorizations SET last_polled_at = ?, poll_interval = ? WHERE device_code_hash = ?",
                arguments: [at.storeValue, interval, deviceCodeHash])
        }
    }

    static func deviceAuthorization(_ row: Row) -> DeviceAuthorization {
        DeviceAuthorization(
            deviceCodeHash: row["device_code_hash"], userCodeHash: row["user_code_hash"], clientID: row["client_id"],
            scope: row.scope("scope"), resources: ResourceSet(storeValue: row["resources"]),
            status: DeviceAuthorization.Status(rawValue: row["status"]) ?? .denied, interval: row["poll_interval"],
            lastPolledAt: row.optionalDate("last_polled_at"), createdAt: row.date("created_at"),
            expiresAt: row.date("expires_at"))
    }
}
