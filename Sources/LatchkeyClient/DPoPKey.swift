import Crypto
import Foundation
import LatchkeyCore

#if canImport(Security)
    import Security
#endif

/// The key an app proves possession of with DPoP (RFC 9449): a P-256 private key that never
/// leaves the device. Tokens issued to requests carrying its proofs are bound to it, so a stolen
/// token is useless without it. It also remembers the latest nonce each server asked for (§8).
public actor DPoPKey {
    let privateKey: P256.Signing.PrivateKey
    /// The JWK SHA-256 thumbprint (RFC 7638): `cnf.jkt` of the tokens bound to this key.
    public nonisolated let thumbprint: String
    private var nonces: [String: String] = [:]

    public init(_ privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
        thumbprint = DPoPProof.thumbprint(of: privateKey.publicKey)
    }

    /// The key in the PEM file at `url`.
    public static func load(from url: URL) throws -> DPoPKey {
        DPoPKey(try P256.Signing.PrivateKey(pemRepresentation: String(contentsOf: url, encoding: .utf8)))
    }

    /// The key in the PEM file at `url`, or a new one written there, readable by this user only:
    /// created `0600` from the start and exclusively (`O_EXCL`), so no other user can read it even
    /// for a moment, and of two processes starting together both end up with the one written.
    public static func loadOrCreate(at url: URL) throws -> DPoPKey {
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(url.path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        if descriptor >= 0 {
            let pem = Array(P256.Signing.PrivateKey().pemRepresentation.utf8)
            let written = pem.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            guard written == pem.count else { throw CocoaError(.fileWriteUnknown) }
        }
        // Another process may be writing it this instant: a few tries to read it whole.
        for _ in 0..<50 {
            if let key = try? load(from: url) { return key }
            usleep(20_000)
        }
        return try load(from: url)
    }

    #if canImport(Security)
        /// The key kept in the Keychain under `service`, or a new one stored there, readable only
        /// after the device is first unlocked and never synced to other devices.
        public static func loadOrCreateInKeychain(service: String = "dev.latchkey.dpop") throws -> DPoPKey {
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: "dpop-key",
            ]
            var lookup = query
            lookup[kSecReturnData as String] = true
            lookup[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(lookup as CFDictionary, &result)
            if status == errSecSuccess, let data = result as? Data {
                return DPoPKey(try P256.Signing.PrivateKey(rawRepresentation: data))
            }
            let key = P256.Signing.PrivateKey()
            var add = query
            add[kSecValueData as String] = key.rawRepresentation
            add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(add as CFDictionary, nil)
            guard added == errSecSuccess else { throw KeychainTokenStore.KeychainError(status: added) }
            return DPoPKey(key)
        }
    #endif

    /// A proof for one request (RFC 9449 §4.2), with the nonce the server at `url` asked for last.
    /// - Parameters:
    ///   - method: the request's method (`htm`).
    ///   - url: the request's URL, without query or fragment in the proof (`htu`).
    ///   - accessToken: with a request to a resource, the token it carries (`ath`).
    ///   - issuedAt: `iat`, now unless a test says otherwise.
    public func proof(method: String, url: URL, accessToken: String? = nil, issuedAt: Date = Date()) throws -> String {
        try DPoPProof.make(
            key: privateKey, method: method, url: url.absoluteString, accessToken: accessToken,
            nonce: nonces[Self.origin(url)], issuedAt: issuedAt)
    }

    /// Keeps the `DPoP-Nonce` a response carried, for the next proofs to that server.
    /// - Returns: whether it is a new one (then a request refused for want of it may be retried).
    @discardableResult
    public func remember(nonce: String?, for url: URL) -> Bool {
        guard let nonce, !nonce.isEmpty, nonces[Self.origin(url)] != nonce else { return false }
        nonces[Self.origin(url)] = nonce
        return true
    }

    static func origin(_ url: URL) -> String {
        "\(url.scheme ?? "")://\(url.host ?? "")" + (url.port.map { ":\($0)" } ?? "")
    }
}
