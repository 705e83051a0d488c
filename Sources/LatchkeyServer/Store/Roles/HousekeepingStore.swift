import Foundation
import LatchkeyCore

/// Deleting what has expired.
public protocol HousekeepingStore: Sendable {
    /// Deletes, in small batches, sessions, pending requests and throttle windows past their expiry, and codes and
    /// tokens past their expiry by more than `retention` (kept that long so a replay is still
    /// recognised), and audit events older than `activityRetention`. - Returns: how many rows went.
    func purgeExpired(at: Date, retention: TimeInterval, activityRetention: TimeInterval) async throws -> Int
}
