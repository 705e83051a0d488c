import Foundation
import LatchkeyCore

/// What DPoP (RFC 9449) needs to share between instances: the proofs already used, so that a
/// replayed one is refused wherever it arrives (§11.1), and the server nonces handed out (§8).
public protocol DPoPStore: Sendable {
    /// Records a proof (by the hash of its key thumbprint and `jti`) until `expiresAt`.
    /// - Returns: `false` when it was recorded before: a replay.
    func recordDPoPProof(hash: String, expiresAt: Date) async throws -> Bool
    /// Keeps a nonce (by hash) good until `expiresAt`.
    func insertDPoPNonce(hash: String, expiresAt: Date) async throws
    /// Whether a nonce with this hash is good at `at`.
    func isLiveDPoPNonce(hash: String, at: Date) async throws -> Bool
}
