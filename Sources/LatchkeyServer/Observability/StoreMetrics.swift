import Dispatch
import Metrics
import Synchronization

/// How long store operations take, as the histogram `latchkey_store_operation_duration_seconds`
/// with labels `store` (`sqlite`, `postgres`) and `operation` (the store method's name, a fixed
/// set). The stores call ``measure(store:operation:_:)`` from their one read, write or query
/// helper, so every operation is measured without a line in each method.
public enum StoreMetrics {
    /// The histogram's name; `latchkey serve` gives it buckets from 50 µs, where store operations lie.
    public static let durationName = "latchkey_store_operation_duration_seconds"

    /// The SQLite store's group commit: how many writes each transaction carried, as the
    /// histogram `latchkey_sqlite_group_commit_batch_size`.
    public static func recordGroupCommit(batchSize: Int) {
        if MetricsSwitch.isOn { batchSizes.record(batchSize) }
    }
    private static let batchSizes = Recorder(label: "latchkey_sqlite_group_commit_batch_size")

    /// One checkpoint of the SQLite store's WAL: how long it took, as the histogram
    /// `latchkey_sqlite_checkpoint_duration_seconds` with the label `mode`: `passive` beside the
    /// writer, or `writer` when the WAL grew past its limit and the writer ran one between batches.
    public static func measureCheckpoint<T>(mode: String, _ body: () throws -> T) rethrows -> T {
        guard MetricsSwitch.isOn else { return try body() }
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let timer = mode == "writer" ? writerCheckpoints : passiveCheckpoints
            timer.recordNanoseconds(elapsed(since: start))
        }
        return try body()
    }
    private static let passiveCheckpoints = checkpointTimer(mode: "passive")
    private static let writerCheckpoints = checkpointTimer(mode: "writer")
    private static func checkpointTimer(mode: String) -> Metrics.Timer {
        Metrics.Timer(
            label: "latchkey_sqlite_checkpoint_duration_seconds", dimensions: [("mode", mode)],
            preferredDisplayUnit: .seconds)
    }

    /// A checkpoint of the SQLite store's WAL that did not run: the counter
    /// `latchkey_sqlite_checkpoint_failures_total` with the labels `mode` (as above) and `result`:
    /// `busy` when another connection was checkpointing the same file (the CLI's; harmless once
    /// in a while), `error` for anything else, an I/O error say. Its pages stay in the WAL for the
    /// next checkpoint, so a failure loses nothing, but the WAL grows while they go on.
    public static func recordCheckpointFailure(mode: String, busy: Bool) {
        guard MetricsSwitch.isOn else { return }
        let dimensions = [("mode", mode), ("result", busy ? "busy" : "error")]
        Counter(label: "latchkey_sqlite_checkpoint_failures_total", dimensions: dimensions).increment()
    }

    /// The SQLite store's WAL as the last passive checkpoint found it, in pages (4 KB each): the
    /// gauge `latchkey_sqlite_wal_pages`. It falls back each time the WAL starts over; one that
    /// keeps climbing means checkpoints fail or a long read (a backup) holds pages in the WAL.
    public static func recordWALPages(_ pages: Int) {
        if MetricsSwitch.isOn { walPages.set(pages) }
    }
    private static let walPages = Meter(label: "latchkey_sqlite_wal_pages")

    /// Operations running on the PostgreSQL pool now, each holding or awaiting a connection:
    /// the gauge `latchkey_postgres_operations_in_flight` (the pool has at most 16 connections).
    public static let postgresOperationsInFlight = Meter(label: "latchkey_postgres_operations_in_flight")

    /// PostgreSQL transactions run again after PostgreSQL ended them for a deadlock or a
    /// serialisation failure: the counter `latchkey_postgres_transactions_retried_total`.
    public static func recordTransactionRetry() {
        if MetricsSwitch.isOn { transactionRetries.increment() }
    }
    private static let transactionRetries = Counter(label: "latchkey_postgres_transactions_retried_total")

    /// One run of the background purge: how long it took, as the histogram
    /// `latchkey_purge_duration_seconds`, and the rows it deleted, as the counter
    /// `latchkey_purged_rows_total`. On SQLite each of its batches is a transaction of its own,
    /// after the requests' writes that wait for the writer; on PostgreSQL it locks the rows it
    /// deletes, as any write does.
    public static func recordPurge(nanoseconds: Int64, rows: Int) {
        guard MetricsSwitch.isOn else { return }
        purgeDurations.recordNanoseconds(nanoseconds)
        purgedRows.increment(by: rows)
    }
    private static let purgeDurations = Metrics.Timer(
        label: "latchkey_purge_duration_seconds", preferredDisplayUnit: .seconds)
    private static let purgedRows = Counter(label: "latchkey_purged_rows_total")

    /// Runs `body` and records how long it took, whether it returned or threw.
    public static func measure<T>(store: String, operation: String, _ body: () async throws -> T) async rethrows -> T {
        guard MetricsSwitch.isOn else { return try await body() }
        let start = DispatchTime.now().uptimeNanoseconds
        defer { timer(store: store, operation: operation).recordNanoseconds(elapsed(since: start)) }
        return try await body()
    }

    /// The same for a synchronous body.
    public static func measure<T>(store: String, operation: String, _ body: () throws -> T) rethrows -> T {
        guard MetricsSwitch.isOn else { return try body() }
        let start = DispatchTime.now().uptimeNanoseconds
        defer { timer(store: store, operation: operation).recordNanoseconds(elapsed(since: start)) }
        return try body()
    }

    private static func elapsed(since start: UInt64) -> Int64 {
        Int64(clamping: DispatchTime.now().uptimeNanoseconds &- start)
    }

    private struct Key: Hashable {
        var store: String
        var operation: String
    }

    private static let timers = Mutex<[Key: Metrics.Timer]>([:])

    private static func timer(store: String, operation: String) -> Metrics.Timer {
        // Looked up by the strings as given (static text: no copy is made for the lookup).
        timers.withLock { timers in
            let key = Key(store: store, operation: operation)
            if let timer = timers[key] { return timer }
            // Only the method's base name ("token(hash:)" becomes "token"): shorter labels, same set.
            let name = String(operation.prefix { $0 != "(" })
            let timer = Metrics.Timer(
                label: durationName, dimensions: [("store", store), ("operation", name)], preferredDisplayUnit: .seconds)
            timers[key] = timer
            return timer
        }
    }
}
