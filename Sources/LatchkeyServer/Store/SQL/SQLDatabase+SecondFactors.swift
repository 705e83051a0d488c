import Foundation
import LatchkeyCore

// Second factors (SecondFactorStore).
extension SQLDatabase {
    public func secondFactors(userID: UserID) async throws -> [SecondFactor] {
        try await rows(
            "SELECT \(sql: SecondFactorColumns.list) FROM second_factors WHERE user_id = \(userID) ORDER BY created_at, id",
            SecondFactorColumns.read)
    }

    public func insertPendingTOTP(_ factor: SecondFactor) async throws {
        _ = try await write([
            .run(
                """
                DELETE FROM second_factors
                WHERE user_id = \(factor.userID) AND kind = \(SecondFactorKind.totp.rawValue) AND confirmed_at IS NULL
                """),
            .require(SecondFactorColumns.insert(factor)),
        ])
    }

    public func confirmTOTP(
        id: SecondFactorID, userID: UserID, step: Int, recoveryCodes: [SecondFactor], at: Date
    ) async throws -> Bool {
        let totp = SecondFactorKind.totp.rawValue
        var steps: [SQLStep] = [
            // The condition first: of two confirmations at once, one finds the row unconfirmed.
            .require(
                """
                UPDATE second_factors SET confirmed_at = \(at), last_step = \(step), last_used_at = \(at)
                WHERE id = \(id) AND user_id = \(userID) AND kind = \(totp) AND confirmed_at IS NULL
                """),
            .run(
                """
                DELETE FROM second_factors
                WHERE user_id = \(userID) AND (kind = \(SecondFactorKind.recoveryCode.rawValue) OR (kind = \(totp) AND id <> \(id)))
                """),
        ]
        steps += recoveryCodes.map { .require(SecondFactorColumns.insert($0)) }
        return try await write(steps) != nil
    }

    public func useTOTP(id: SecondFactorID, step: Int, at: Date) async throws -> Bool {
        try await run(
            """
            UPDATE second_factors SET last_step = \(step), last_used_at = \(at)
            WHERE id = \(id) AND kind = \(SecondFactorKind.totp.rawValue) AND confirmed_at IS NOT NULL AND last_step < \(step)
            """) == 1
    }

    public func useRecoveryCode(userID: UserID, hash: String, at: Date) async throws -> Bool {
        try await run(
            """
            UPDATE second_factors SET used_at = \(at), last_used_at = \(at)
            WHERE user_id = \(userID) AND kind = \(SecondFactorKind.recoveryCode.rawValue) AND secret = \(hash)
                AND used_at IS NULL
            """) == 1
    }

    public func replaceRecoveryCodes(userID: UserID, with codes: [SecondFactor]) async throws {
        let steps: [SQLStep] =
            [
                .run(
                    """
                    DELETE FROM second_factors WHERE user_id = \(userID) AND kind = \(SecondFactorKind.recoveryCode.rawValue)
                    """)
            ] + codes.map { .require(SecondFactorColumns.insert($0)) }
        guard try await write(steps) != nil else { throw StoreError.conflict("The recovery codes were not stored.") }
    }

    public func deleteSecondFactors(userID: UserID) async throws {
        try await run("DELETE FROM second_factors WHERE user_id = \(userID)")
    }
}

/// The columns of a second factor, in the order ``read(_:)`` reads them.
enum SecondFactorColumns {
    static let list = "id, user_id, kind, name, secret, last_step, created_at, confirmed_at, last_used_at, used_at"

    static func insert(_ factor: SecondFactor) -> SQLStatement {
        """
        INSERT INTO second_factors (\(sql: list))
        VALUES (\(factor.id), \(factor.userID), \(factor.kind.rawValue), \(factor.name), \(factor.secret), \(factor.lastStep),
            \(factor.createdAt), \(factor.confirmedAt), \(factor.lastUsedAt), \(factor.usedAt))
        """
    }

    @Sendable static func read(_ row: any SQLRow) throws -> SecondFactor {
        SecondFactor(
            id: try row.key(0), userID: try row.key(1), kind: try row.value(2), name: try row.string(3),
            secret: try row.string(4), lastStep: try row.int(5), createdAt: try row.date(6),
            confirmedAt: try row.optionalDate(7), lastUsedAt: try row.optionalDate(8), usedAt: try row.optionalDate(9))
    }
}
