#if canImport(Security)
    import Foundation
    import Security

    /// Tokens in the Keychain (Apple platforms), as a generic password per key, readable only after
    /// the device is first unlocked and never synced to other devices.
    public struct KeychainTokenStore: TokenStore {
        public let service: String

        public init(service: String = "dev.latchkey.tokens") {
            self.service = service
        }

        public func load(key: String) async throws -> TokenSet? {
            var query = baseQuery(key)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
            return try JSONDecoder().decode(TokenSet.self, from: data)
        }

        public func save(_ tokens: TokenSet, key: String) async throws {
            let data = try JSONEncoder().encode(tokens)
            let update = [kSecValueData as String: data] as CFDictionary
            var status = SecItemUpdate(baseQuery(key) as CFDictionary, update)
            if status == errSecItemNotFound {
                var add = baseQuery(key)
                add[kSecValueData as String] = data
                add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                status = SecItemAdd(add as CFDictionary, nil)
            }
            guard status == errSecSuccess else { throw KeychainError(status: status) }
        }

        public func remove(key: String) async throws {
            let status = SecItemDelete(baseQuery(key) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
        }

        private func baseQuery(_ key: String) -> [String: Any] {
            [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
        }

        /// A Keychain call failed with this `OSStatus`.
        public struct KeychainError: Error, Sendable {
            public var status: OSStatus
        }
    }
#endif
