import Foundation
import JWTKit
import LatchkeyCore
import Synchronization

/// The server's signing keys: one current key per algorithm (``SigningAlgorithm``) and every key
/// still published, read from the store so that every instance signs with the same key and
/// publishes the same set (`jwks_uri`).
///
/// Rotation (`latchkey keys rotate`) stores a new key that is published at once and used for
/// signing only from its `activatesAt`, so relying parties that cache the key set fetch it again
/// before they meet it; the key it replaces stays published until every token it signed has expired.
public actor SigningKeyring {
    private let store: any SigningKeyStore
    /// Also seals second factors' keys (``SecondFactors``).
    let keyEncryptionKey: KeyEncryptionKey
    /// How long tokens signed with a key stay valid at most (ID tokens, and JWT access tokens
    /// of up to ``ProtectedResource/maximumJWTLifetime``): a replaced key stays published this
    /// long after it stops signing.
    public let signedTokenLifetime: TimeInterval
    /// Another instance's rotation is seen within this long.
    static let reloadInterval: TimeInterval = 60

    private struct Loaded {
        /// The key that signs for each algorithm (``rank(_:)``), ready to sign.
        var signers: [SigningAlgorithm: JWSSigner]
        /// Every published key, for verifying.
        var publicKeys: PublicKeySet
        var publicKeyRecords: [SigningKeyRecord]
        var loadedAt: Date
        /// The next time a stored key starts signing: the cache is read again then.
        var nextActivation: Date?

        /// Until when the keys hold: a reload interval, or the next activation if sooner.
        var validUntil: Date { min(loadedAt.addingTimeInterval(SigningKeyring.reloadInterval), nextActivation ?? .distantFuture) }
    }
    private var loaded: Loaded?
    /// Moved on by each rotation, so that a load begun before it (the actor runs other calls
    /// while a load waits for the store) does not put the keys it read back in place afterwards.
    private var generation = 0
    /// The signers of ``loaded`` and until when they hold, readable without a hop onto the actor:
    /// every code exchange with `openid` asks for one.
    private nonisolated let signers = SignerCache()

    public init(store: any SigningKeyStore, keyEncryptionKey: KeyEncryptionKey, signedTokenLifetime: TimeInterval) {
        self.store = store
        self.keyEncryptionKey = keyEncryptionKey
        // JWT access tokens (RFC 9068) are signed with the same keys and may live this long too.
        self.signedTokenLifetime = max(signedTokenLifetime, TimeInterval(ProtectedResource.maximumJWTLifetime))
    }

    /// The current signer for `algorithm`. Signing itself happens in the caller's task, so the
    /// two cores sign at once (an RSA signature takes a millisecond).
    public nonisolated func signer(for algorithm: SigningAlgorithm, at now: Date) async throws -> JWSSigner {
        if let cached = signers.signer(for: algorithm, at: now) { return cached }
        return try await loadedSigner(for: algorithm, at: now)
    }

    private func loadedSigner(for algorithm: SigningAlgorithm, at now: Date) async throws -> JWSSigner {
        let state: Loaded
        do { state = try await self.state(at: now, needing: algorithm) } catch {
            signers.reloadFailed()
            throw error
        }
        guard let signer = state.signers[algorithm] else {
            throw SigningKeyError.sealing
        }
        return signer
    }

    /// Verifies a JWS this server signed with a key it still publishes (for example an
    /// `id_token_hint`): the header must name a published `kid` and that key's own algorithm.
    /// Claims are not checked here.
    /// - Returns: `nil` when the signature, key or algorithm is wrong.
    public func verify<Payload: JWTPayload>(_ token: String, as _: Payload.Type, at now: Date) async throws -> Payload? {
        let state = try await state(at: now, needing: nil)
        let allowed = Set(SigningAlgorithm.allCases.map(\.rawValue))
        guard case .success(let payload) = await state.publicKeys.verify(token, as: Payload.self, allowed: allowed) else {
            return nil
        }
        return payload
    }

    /// The key set (RFC 7517 §5) as JSON, read from the store on every call so it is never behind
    /// another instance: every key published now, including those not yet signing.
    public func publishedKeySet(at now: Date) async throws -> String {
        var keys = try await store.signingKeys(at: now)
        if Set(keys.map(\.algorithm)).count < SigningAlgorithm.allCases.count {
            // A store no key was made for yet (the server makes them at start-up; an embedder may not).
            keys = try await state(at: now, needing: nil).publicKeyRecords
        }
        return #"{"keys":["# + keys.map(\.publicJWK).joined(separator: ",") + "]}"
    }

    /// Every published key, oldest first (for `latchkey keys list`).
    public func publishedKeys(at now: Date) async throws -> [SigningKeyRecord] {
        try await store.signingKeys(at: now)
    }

    /// Adds a new key for each algorithm, published now and signing from `now + leadTime`; the
    /// keys they replace stay published until `signedTokenLifetime` after that.
    public func rotate(leadTime: TimeInterval, at now: Date) async throws -> [SigningKeyRecord] {
        // Open the keys in use first: a rotation with another key-encryption key than the servers'
        // would seal keys they cannot open, and fail them when the keys activate.
        _ = try await state(at: now, needing: nil)
        var added: [SigningKeyRecord] = []
        for algorithm in SigningAlgorithm.allCases {
            added.append(try await addKey(algorithm, activatesAt: now.addingTimeInterval(leadTime), at: now))
        }
        generation += 1
        loaded = nil
        signers.clear()
        return added
    }

    /// Creates a key for every algorithm that has none yet, usable at once (no relying party can
    /// have cached a set without it). Two instances starting together may both create one; then
    /// both are published and the one not replaced signs (``rank(_:)``).
    public func ensureKeys(at now: Date) async throws {
        _ = try await state(at: now, needing: nil)
    }

    private func state(at now: Date, needing algorithm: SigningAlgorithm?) async throws -> Loaded {
        if let loaded, now.timeIntervalSince(loaded.loadedAt) < Self.reloadInterval,
            loaded.nextActivation.map({ now < $0 }) ?? true,
            algorithm.map({ loaded.signers[$0] != nil }) ?? true
        {
            // Found loaded (by another call): the cache holds them again, its reload claim settled.
            signers.set(loaded.signers, validUntil: loaded.validUntil)
            return loaded
        }
        let generation = self.generation
        var records = try await store.signingKeys(at: now)
        for missing in SigningAlgorithm.allCases where !records.contains(where: { $0.algorithm == missing }) {
            records.append(try await addKey(missing, activatesAt: now, at: now))
        }
        var current: [SigningAlgorithm: SigningKeyRecord] = [:]
        for record in records where record.activatesAt <= now {
            if let chosen = current[record.algorithm], Self.rank(chosen) > Self.rank(record) { continue }
            current[record.algorithm] = record
        }
        var signers: [SigningAlgorithm: JWSSigner] = [:]
        for record in current.values {
            let der = try keyEncryptionKey.open(record.sealedPrivateKey, kid: record.kid)
            signers[record.algorithm] = try JWSSigner(algorithm: record.algorithm, kid: record.kid, privateDER: der)
        }
        let keySet = Data((#"{"keys":["# + records.map(\.publicJWK).joined(separator: ",") + "]}").utf8)
        let state = Loaded(
            signers: signers, publicKeys: try await PublicKeySet.parse(keySet),
            publicKeyRecords: records, loadedAt: now,
            nextActivation: records.map(\.activatesAt).filter { $0 > now }.min())
        guard generation == self.generation else { return state }
        loaded = state
        self.signers.set(state.signers, validUntil: state.validUntil)
        return state
    }

    /// Which active key signs: one not replaced yet (`published_until` unset) before a replaced
    /// one, then the latest to activate, then the `kid`, so every instance picks the same. (When two
    /// instances make the first key together, the one inserted last replaced the other, whatever
    /// their activation times: the unreplaced one must sign, or what it signs would be unpublished early.)
    private static func rank(_ key: SigningKeyRecord) -> (Int, Date, String) {
        (key.publishedUntil == nil ? 1 : 0, key.activatesAt, key.kid)
    }

    private func addKey(_ algorithm: SigningAlgorithm, activatesAt: Date, at now: Date) async throws -> SigningKeyRecord {
        let material = try SigningKeyMaterial.generate(algorithm)
        let kid = material.kid
        let record = SigningKeyRecord(
            kid: kid, algorithm: algorithm, publicJWK: material.publicJWK,
            sealedPrivateKey: try keyEncryptionKey.seal(material.privateDER, kid: kid), createdAt: now,
            activatesAt: activatesAt)
        // Tokens the replaced key signs until `activatesAt` stay verifiable until they expire,
        // with one reload interval for instances that have not yet seen the new key.
        try await store.insertSigningKey(
            record, retiredKeysPublishedUntil: activatesAt.addingTimeInterval(signedTokenLifetime + Self.reloadInterval))
        return record
    }
}

/// The current signers and until when they hold, behind a lock, so that signing needs no hop onto
/// the keyring's actor. When they expire, one caller reloads them while the others go on signing
/// with the ones they have (still published), so a reload is not repeated by every request at once.
private final class SignerCache: Sendable {
    private struct Snapshot {
        var signers: [SigningAlgorithm: JWSSigner]
        var validUntil: Date
        var reloading = false
    }
    private let current = Mutex<Snapshot?>(nil)

    /// A signer to use now, or `nil` when the caller is the one to load the keys.
    func signer(for algorithm: SigningAlgorithm, at now: Date) -> JWSSigner? {
        current.withLock { snapshot in
            guard let signer = snapshot?.signers[algorithm] else { return nil }
            if let validUntil = snapshot?.validUntil, now < validUntil { return signer }
            if snapshot?.reloading == true { return signer }
            snapshot?.reloading = true
            return nil
        }
    }

    func set(_ signers: [SigningAlgorithm: JWSSigner], validUntil: Date) {
        current.withLock { $0 = Snapshot(signers: signers, validUntil: validUntil) }
    }

    /// The caller that was to reload could not: the next one tries.
    func reloadFailed() { current.withLock { $0?.reloading = false } }

    func clear() { current.withLock { $0 = nil } }
}
