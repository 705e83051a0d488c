import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// Device authorization requests (RFC 8628).
extension PostgresStore {
    public func insertDeviceAuthorization(_ authorization: DeviceAuthorization) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO device_authorizations (device_code_hash, user_code_hash, client_id, scope, resources, status,
                    poll_interval, last_polled_at, created_at, expires_at)
                VALUES (\(authorization.deviceCodeHash), \(authorization.userCodeHash), \(authorization.clientID),
                    \(authorization.scope.description), \(authorization.resources.description),
                    \(authorization.status.rawValue), \(authorization.interval),
                    \(authorization.lastPolledAt?.timeIntervalSince1970), \(authorization.createdAt.timeIntervalSince1970),
                    \(authorization.expiresAt.timeIntervalSince1970))
                """)
        }
    }

    public func deviceAuthorization(deviceCodeHash: String) async throws -> DeviceAuthorization? {
        try await perform { client in
            try await client.query("SELECT * FROM device_authorizations WHERE device_code_hash = \(deviceCodeHash)")
                .map(Self.deviceAuthorization).first
        }
    }

    public func claimDeviceAuthorization(userCodeHash: String, by sessionIDHash: SessionIDHash, at: Date) async throws
        -> DeviceAuthorization?
    {
        try await perform { client in
            try await client.query(
                """
                UPDATE device_authorizations SET status = 'claimed', claimed_by = \(sessionIDHash)
                WHERE user_code_hash = \(userCodeHash) AND expires_at > \(at.timeIntervalSince1970)
                    AND (status = 'pending' OR (status = 'claimed' AND claimed_by = \(sessionIDHash)))
                RETURNING *
                """
            ).map(Self.deviceAuthorization).first
        }
    }

    public func settleDeviceAuthorization(deviceCodeHash: String, status: DeviceAuthorization.Status) async throws -> Bool {
        try await perform { client in
            try await client.query(
                """
                UPDATE device_authorizations SET status = \(status.rawValue)
                WHERE device_code_hash = \(deviceCodeHash) AND status = 'claimed' RETURNING device_code_hash
                """
            ).count() == 1
        }
    }

    public func recordDevicePoll(deviceCodeHash: String, at: Date, interval: Int) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                UPDATE device_authorizations SET last_polled_at = \(at.timeIntervalSince1970), poll_interval = \(interval)
                WHERE device_code_hash = \(deviceCodeHash)
                """)
        }
    }

    static func deviceAuthorization(_ row: PostgresRandomAccessRow) throws -> DeviceAuthorization {
        DeviceAuthorization(
            deviceCodeHash: try row.string("device_code_hash"), userCodeHash: try row.string("user_code_hash"),
            clientID: try ClientID(rawValue: row.string("client_id")), scope: try row.scope("scope"),
            resources: ResourceSet(storeValue: try row.string("resources")),
            status: DeviceAuthorization.Status(rawValue: try row.string("status")) ?? .denied,
            interval: try row["poll_interval"].decode(Int.self), lastPolledAt: try row.optionalDate("last_polled_at"),
            createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"))
    }
}
