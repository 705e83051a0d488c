import Foundation
import LatchkeyCore

/// Deleting what has expired.
public protocol HousekeepingStore: Sendable {
    /// Deletes, in small batches, sessions, pending requests and throttle windows past their expiry, and codes and
    /// tokens past their expiry by more than `retention` (kept that long so a replay is still
    /// recognised), and audit events older than `activityRetention`. - Returns: how many rows went.
    func purgeExpired(at: Date, retention: TimeInterval, activityRetention: TimeInterval) async throws -> Int
    /// How many schema steps the store has applied (``SchemaMigration/all`` when it is up to date).
    /// It reads the store, so it also tells whether the store answers at all.
    func appliedSchemaSteps() async throws -> Int
}
