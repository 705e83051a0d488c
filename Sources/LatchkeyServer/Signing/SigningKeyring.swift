import Foundation
import JWTKit
import LatchkeyCore

/// The server's signing keys: one current key per algorithm (``SigningAlgorithm``) and every key
/// still published, read from the store so that every instance signs with the same key and
/// publishes the same set (`jwks_uri`).
///
/// Rotation (`latchkey keys rotate`) stores a new key that is published at once and used for
/// signing only from its `activatesAt`, so relying parties that cache the key set fetch it again
/// before they meet it; the key it replaces stays published until every token it signed has expired.
public actor SigningKeyring {
    private let store: any SigningKeyStore
    private let keyEncryptionKey: KeyEncryptionKey
    /// How long tokens signed with a key stay valid at most: a replaced key stays published this
    /// long after it stops signing.
    public let signedTokenLifetime: TimeInterval
    /// Another instance's rotation is seen within this long.
    static let reloadInterval: TimeInterval = 60

    private struct Loaded {
        var keys: JWTKeyCollection
        /// The newest active key of each algorithm.
        var current: [SigningAlgorithm: String]
        /// Every published key, for verifying.
        var publicKeys: PublicKeySet
        var publicKeyRecords: [SigningKeyRecord]
        var loadedAt: Date
        /// The next time a stored key starts signing: the cache is read again then.
        var nextActivation: Date?
    }
    private var loaded: Loaded?

    public init(store: any SigningKeyStore, keyEncryptionKey: KeyEncryptionKey, signedTokenLifetime: TimeInterval) {
        self.store = store
        self.keyEncryptionKey = keyEncryptionKey
        self.signedTokenLifetime = signedTokenLifetime
    }

    /// Signs `payload` as a JWS with the current key for `algorithm`, `kid` and `typ` in the header.
    public func sign(_ payload: some JWTPayload, algorithm: SigningAlgorithm, type: String = "JWT", at now: Date)
        async throws -> String
    {
        let state = try await state(at: now, needing: algorithm)
        guard let kid = state.current[algorithm] else { throw SigningKeyError.sealing }
        var header = JWTHeader()
        header.typ = type
        header.alg = algorithm.rawValue
        return try await state.keys.sign(payload, kid: JWKIdentifier(string: kid), header: header)
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
        var added: [SigningKeyRecord] = []
        for algorithm in SigningAlgorithm.allCases {
            added.append(try await addKey(algorithm, activatesAt: now.addingTimeInterval(leadTime), at: now))
        }
        loaded = nil
        return added
    }

    /// Creates a key for every algorithm that has none yet, usable at once (no relying party can
    /// have cached a set without it). Two instances starting together may both create one; then
    /// both are published and the newer signs.
    public func ensureKeys(at now: Date) async throws {
        _ = try await state(at: now, needing: nil)
    }

    private func state(at now: Date, needing algorithm: SigningAlgorithm?) async throws -> Loaded {
        if let loaded, now.timeIntervalSince(loaded.loadedAt) < Self.reloadInterval,
            loaded.nextActivation.map({ now < $0 }) ?? true,
            algorithm.map({ loaded.current[$0] != nil }) ?? true
        {
            return loaded
        }
        var records = try await store.signingKeys(at: now)
        for missing in SigningAlgorithm.allCases where !records.contains(where: { $0.algorithm == missing }) {
            records.append(try await addKey(missing, activatesAt: now, at: now))
        }
        let keys = JWTKeyCollection()
        var current: [SigningAlgorithm: SigningKeyRecord] = [:]
        for record in records where record.activatesAt <= now {
            if let chosen = current[record.algorithm], (chosen.activatesAt, chosen.kid) > (record.activatesAt, record.kid) {
                continue
            }
            current[record.algorithm] = record
        }
        for record in current.values {
            let der = try keyEncryptionKey.open(record.sealedPrivateKey, kid: record.kid)
            try await SigningKeyMaterial.addSigner(algorithm: record.algorithm, privateDER: der, kid: record.kid, to: keys)
        }
        let keySet = Data((#"{"keys":["# + records.map(\.publicJWK).joined(separator: ",") + "]}").utf8)
        let state = Loaded(
            keys: keys, current: current.mapValues(\.kid), publicKeys: try await PublicKeySet.parse(keySet),
            publicKeyRecords: records, loadedAt: now,
            nextActivation: records.map(\.activatesAt).filter { $0 > now }.min())
        loaded = state
        return state
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
