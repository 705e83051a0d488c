import Foundation
import LatchkeyCore

// Device authorization requests (RFC 8628) and DPoP proofs seen and server nonces (RFC 9449).
extension SQLDatabase {
    public func insertDeviceAuthorization(_ authorization: DeviceAuthorization) async throws {
        try await insert(
            """
            INSERT INTO device_authorizations (device_code_hash, user_code_hash, client_id, scope, resources, status,
                poll_interval, last_polled_at, created_at, expires_at)
            VALUES (\(authorization.deviceCodeHash), \(authorization.userCodeHash), \(authorization.clientID),
                \(authorization.scope), \(authorization.resources), \(authorization.status.rawValue), \(authorization.interval),
                \(authorization.lastPolledAt), \(authorization.createdAt), \(authorization.expiresAt))
            """)
    }

    public func deviceAuthorization(deviceCodeHash: String) async throws -> DeviceAuthorization? {
        try await row(
            "SELECT \(sql: Self.deviceColumns) FROM device_authorizations WHERE device_code_hash = \(deviceCodeHash)",
            Self.deviceAuthorization)
    }

    public func claimDeviceAuthorization(userCodeHash: String, by sessionIDHash: SessionIDHash, at: Date) async throws
        -> DeviceAuthorization?
    {
        try await returning(
            """
            UPDATE device_authorizations SET status = 'claimed', claimed_by = \(sessionIDHash)
            WHERE user_code_hash = \(userCodeHash) AND expires_at > \(at)
                AND (status = 'pending' OR (status = 'claimed' AND claimed_by = \(sessionIDHash)))
            RETURNING \(sql: Self.deviceColumns)
            """, Self.deviceAuthorization
        ).first
    }

    public func settleDeviceAuthorization(deviceCodeHash: String, status: DeviceAuthorization.Status) async throws -> Bool {
        try await run(
            """
            UPDATE device_authorizations SET status = \(status.rawValue)
            WHERE device_code_hash = \(deviceCodeHash) AND status = 'claimed'
            """) == 1
    }

    public func recordDevicePoll(deviceCodeHash: String, at: Date, interval: Int) async throws {
        try await run(
            """
            UPDATE device_authorizations SET last_polled_at = \(at), poll_interval = \(interval)
            WHERE device_code_hash = \(deviceCodeHash)
            """)
    }

    private static var deviceColumns: String {
        """
        device_code_hash, user_code_hash, client_id, scope, resources, status, poll_interval, last_polled_at, created_at,
        expires_at
        """
    }

    @Sendable private static func deviceAuthorization(_ row: any SQLRow) throws -> DeviceAuthorization {
        DeviceAuthorization(
            deviceCodeHash: try row.string(0), userCodeHash: try row.string(1), clientID: try row.key(2),
            scope: try row.scope(3), resources: try row.resources(4), status: try row.value(5), interval: try row.int(6),
            lastPolledAt: try row.optionalDate(7), createdAt: try row.date(8), expiresAt: try row.date(9))
    }

    // MARK: DPoP

    public func recordDPoPProof(hash: String, expiresAt: Date) async throws -> Bool {
        try await run(
            "INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES (\(hash), \(expiresAt)) ON CONFLICT DO NOTHING") == 1
    }

    public func insertDPoPNonce(hash: String, expiresAt: Date) async throws {
        try await run(
            "INSERT INTO dpop_nonces (nonce_hash, expires_at) VALUES (\(hash), \(expiresAt)) ON CONFLICT DO NOTHING")
    }

    public func isLiveDPoPNonce(hash: String, at: Date) async throws -> Bool {
        try await row("SELECT 1 FROM dpop_nonces WHERE nonce_hash = \(hash) AND expires_at > \(at)") { _ in true } ?? false
    }
}
