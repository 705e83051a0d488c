import Foundation
import LatchkeyCore

/// The signed assertions already used (client assertions, RFC 7523 §3 item 7): each is kept, by
/// the hash of its issuer and `jti`, until it expires, so a replay is refused at every instance.
public protocol AssertionStore: Sendable {
    /// Records an assertion until `expiresAt`.
    /// - Returns: `false` when it was recorded before: a replay.
    func recordAssertion(hash: String, expiresAt: Date) async throws -> Bool
}
