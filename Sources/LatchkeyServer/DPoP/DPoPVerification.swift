import Foundation
import LatchkeyCore
import Synchronization

/// Why a DPoP proof was not accepted: `invalid_dpop_proof`, or `use_dpop_nonce` with the nonce
/// to put in the next proof (RFC 9449 §7.1, §8, §9).
public struct DPoPFailure: Error, Sendable, Equatable {
    public var error: OAuthError
    /// The nonce for the `DPoP-Nonce` header, with `use_dpop_nonce`.
    public var nonce: String?

    static func invalid(_ description: String) -> DPoPFailure {
        DPoPFailure(error: OAuthError(.invalidDPoPProof, description), nonce: nil)
    }
}

/// The server nonce (RFC 9449 §8) this instance hands out: random, replaced every half of
/// ``ServerConfiguration/dpopNonceLifetime``, and kept (by hash) in the store for its whole
/// lifetime, so that a nonce from one instance is good at every other.
public final class DPoPNonces: Sendable {
    private let current = Mutex<(value: String, replaceAt: Date)?>(nil)

    public init() {}

    func nonce(at now: Date, lifetime: TimeInterval, store: any DPoPStore) async throws -> String {
        if let current = current.withLock({ $0 }), now < current.replaceAt { return current.value }
        let value = RandomToken.randomBase64URL(byteCount: 16)
        try await store.insertDPoPNonce(hash: RandomToken.hash(value), expiresAt: now.addingTimeInterval(lifetime))
        current.withLock { $0 = (value, now.addingTimeInterval(lifetime / 2)) }
        return value
    }

    /// Whether `value` is the nonce this instance hands out now (a check with no store read).
    func isCurrent(_ value: String, at now: Date) -> Bool {
        current.withLock { current in
            guard let current, now < current.replaceAt else { return false }
            return ConstantTime.equals(current.value, value)
        }
    }
}

/// Checks DPoP proofs (RFC 9449) at the token endpoint and at resources. It reads and records
/// proofs and nonces, and touches nothing else.
struct DPoPVerifier: Sendable {
    let proofs: any DPoPStore
    let nonces: DPoPNonces
    let context: ServerContext

    /// Checks a request's `DPoP` header (RFC 9449 §4.3) for `method` on `path` of the issuer's
    /// public URL (so a reverse proxy in front does not change `htu`), and returns the key's
    /// thumbprint. A replayed proof is refused wherever it arrives: its key and `jti` are kept in
    /// the store for as long as the proof could be accepted. With ``ServerConfiguration/requireDPoPNonce``
    /// a proof must carry a nonce this server handed out within ``ServerConfiguration/dpopNonceLifetime``.
    /// - Parameter accessToken: at a resource, the access token sent with the proof (`ath`).
    func verify(_ header: String, method: String, path: String, accessToken: String? = nil) async throws
        -> Result<String, DPoPFailure>
    {
        let configuration = context.configuration
        let now = context.now
        let proof: DPoPProof
        do {
            proof = try DPoPProof(
                verifying: header, method: method, url: context.issuer + path, accessToken: accessToken, now: now,
                lifetime: configuration.dpopProofLifetime, leeway: Self.leeway)
        } catch {
            context.event(.dpopProofRefused, ["reason": "\(error.description)"])
            return .failure(.invalid(error.description))
        }
        if configuration.requireDPoPNonce {
            var good = false
            if let nonce = proof.nonce, nonce.utf8.count <= 256 {
                good = nonces.isCurrent(nonce, at: now)
                if !good { good = try await proofs.isLiveDPoPNonce(hash: RandomToken.hash(nonce), at: now) }
            }
            if !good {
                let fresh = try await nonces.nonce(at: now, lifetime: configuration.dpopNonceLifetime, store: proofs)
                return .failure(
                    DPoPFailure(
                        error: OAuthError(.useDPoPNonce, "Make the DPoP proof again with the nonce in the DPoP-Nonce header."),
                        nonce: fresh))
            }
        }
        let seen = RandomToken.hash(proof.keyThumbprint + " " + proof.jti)
        let until = proof.issuedAt.addingTimeInterval(configuration.dpopProofLifetime + Self.leeway)
        guard try await proofs.recordDPoPProof(hash: seen, expiresAt: until) else {
            context.event(.dpopProofReplayed, ["jkt": "\(proof.keyThumbprint)"])
            return .failure(.invalid("This DPoP proof was used before; make a new one for every request."))
        }
        return .success(proof.keyThumbprint)
    }

    /// How far ahead of this server's clock a proof's `iat` may be.
    static let leeway: TimeInterval = 60
}
