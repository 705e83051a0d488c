import Foundation
import GRDB
import LatchkeyServer

extension SQLiteStore {
    /// The shared purge (``ExpiryPurge``) with each batch in the group commit's background lane:
    /// a transaction of its own, after the requests' writes that are waiting (``GroupCommit``), so
    /// that a purge of many rows does not lengthen the token requests' writes beside it.
    public func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int {
        try await ExpiryPurge.run(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: unusedRegistrationRetention, batchSize: Self.purgeBatchSize
        ) { sql, cutoff in
            try await write(lane: .background) { db in
                try db.execute(sql: sql, arguments: [cutoff])
                return db.changesCount
            }
        }
    }

    /// Rows per purge batch: fewer than ``ExpiryPurge/batchSize``, since each batch holds SQLite's
    /// one writer and the token requests' writes wait behind it. Beside a purge of a million rows,
    /// client credentials' p99 was 14.4 ms with 500 and 8.2 ms with 100; 50 did no better
    /// (`Benchmarks/purge_pause.py`, docs/performance.md).
    static let purgeBatchSize = 100
}
