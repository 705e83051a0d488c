import Foundation
import LatchkeyCore

/// Failure counts for throttling, kept in the store so every instance shares them.
public protocol ThrottleStore: Sendable {
    /// Counts one failure against `key`: in its current window if that has not ended at `at`,
    /// else in a new window of `window` seconds. - Returns: the window after counting.
    func recordFailure(key: ThrottleKey, at: Date, window: TimeInterval) async throws -> ThrottleWindow
    /// The failures counted against `key` in a window that has not ended at `at`, if any.
    func failures(key: ThrottleKey, at: Date) async throws -> ThrottleWindow?
    /// Forgets the failures counted against `key`.
    func clearFailures(key: ThrottleKey) async throws
    /// Takes back one count against `key` in its window open at `at` (an attempt that was counted
    /// before it was tried, and succeeded).
    func forgiveFailure(key: ThrottleKey, at: Date) async throws
    /// The client with `id`, and the failures counted in a window open at `at` against `knownKey`
    /// when the client exists or `unknownKey` when it does not: client authentication needs both
    /// on every request, so they come in one read.
    func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws -> (
        Client?, ThrottleWindow?
    )
}
