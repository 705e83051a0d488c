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

    /// The key in the PEM file at `url`, or a new one written there, readable by this user only
    /// (`0600`, in a `0700` folder).
    public static func loadOrCreate(at url: URL) throws -> DPoPKey {
        if FileManager.default.fileExists(atPath: url.path) {
            return DPoPKey(try P256.Signing.PrivateKey(pemRepresentation: String(contentsOf: url, encoding: .utf8)))
        }
        let key = P256.Signing.PrivateKey()
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard
            FileManager.default.createFile(
                atPath: url.path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        return DPoPKey(key)
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
