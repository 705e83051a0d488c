import Crypto
import Foundation
import LatchkeyCore

/// The key that seals the private halves of the signing keys in the store (AES-256-GCM), so that
/// a copy of the database alone cannot sign tokens. The store never holds it: it comes from the
/// environment (`LATCHKEY_KEY_ENCRYPTION_KEY`) or a file (`--key-encryption-key-file`), and every
/// instance of one deployment needs the same one (docs/operations.md).
public struct KeyEncryptionKey: Sendable {
    let key: SymmetricKey

    /// Reads 32 bytes written in base64 or base64url (what `openssl rand -base64 32` prints).
    /// - Returns: `nil` for anything else.
    public init?(text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard
            let bytes = Data(base64Encoded: trimmed)
                ?? Base64URL.decode(trimmed.replacingOccurrences(of: "=", with: "")),
            bytes.count == 32
        else { return nil }
        key = SymmetricKey(data: bytes)
    }

    init(key: SymmetricKey) { self.key = key }

    /// A new random key, as base64 text to keep (and the key itself).
    public static func generate() -> (key: KeyEncryptionKey, text: String) {
        let key = SymmetricKey(size: .bits256)
        let text = key.withUnsafeBytes { Data($0).base64EncodedString() }
        return (KeyEncryptionKey(key: key), text)
    }

    /// Seals `plaintext`, bound to `kid` (authenticated, so a sealed key cannot be moved to another row).
    func seal(_ plaintext: Data, kid: String) throws -> String {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Data(kid.utf8))
        guard let combined = box.combined else { throw SigningKeyError.sealing }
        return combined.base64EncodedString()
    }

    /// Opens what ``seal(_:kid:)`` made for the same `kid`.
    /// - Throws: ``SigningKeyError/wrongKeyEncryptionKey`` when this is not the key that sealed it.
    func open(_ sealed: String, kid: String) throws -> Data {
        guard let combined = Data(base64Encoded: sealed), let box = try? AES.GCM.SealedBox(combined: combined),
            let plaintext = try? AES.GCM.open(box, using: key, authenticating: Data(kid.utf8))
        else { throw SigningKeyError.wrongKeyEncryptionKey(kid: kid) }
        return plaintext
    }
}

/// Why the server cannot sign.
public enum SigningKeyError: Error, Sendable, CustomStringConvertible {
    case sealing
    /// The store's keys were sealed under another key-encryption key.
    case wrongKeyEncryptionKey(kid: String)

    public var description: String {
        switch self {
        case .sealing: "a signing key could not be sealed"
        case .wrongKeyEncryptionKey(let kid):
            "the signing key \(kid) in the store was sealed with a different key-encryption key: give this instance "
                + "the same LATCHKEY_KEY_ENCRYPTION_KEY (or --key-encryption-key-file) as the others"
        }
    }
}
