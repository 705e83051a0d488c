import Foundation
import LatchkeyCore

/// Deleting what has expired.
public protocol HousekeepingStore: Sendable {
    /// Deletes, in small batches, sessions, pending requests and throttle windows past their expiry, and codes and
    /// tokens past their expiry by more than `retention` (kept that long so a replay is still
    /// recognised), audit events older than `activityRetention`, expired initial access tokens and
    /// pushed authorization requests, and
    /// self-registered clients never used in `unusedRegistrationRetention`. - Returns: how many rows went.
    func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int
    /// How many schema steps the store has applied (``SchemaMigration/all`` when it is up to date).
    /// It reads the store, so it also tells whether the store answers at all.
    func appliedSchemaSteps() async throws -> Int
    /// Records what a running server was started with (`issuer`, `mail_from`), so that the admin
    /// commands, which run apart from it, can build what the server would (an invitation's link).
    func recordServerFact(name: String, value: String, at: Date) async throws
    /// The value last recorded under `name`, if any.
    func serverFact(name: String) async throws -> String?
}

extension HousekeepingStore {
    /// ``purgeExpired(at:retention:activityRetention:unusedRegistrationRetention:)`` with the
    /// default time for unused self-registered clients.
    public func purgeExpired(at: Date, retention: TimeInterval, activityRetention: TimeInterval) async throws -> Int {
        try await purgeExpired(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: ExpiryPurge.defaultUnusedRegistrationRetention)
    }
}
