import Crypto
import Foundation
import LatchkeyCore

/// The authenticator data an authenticator signs (WebAuthn Level 3 §6.1).
struct AuthenticatorData: Sendable {
    /// SHA-256 of the relying party id the authenticator used.
    let rpIDHash: [UInt8]
    let flags: UInt8
    let signCount: UInt32
    /// At registration (`AT` flag): the new credential's id and public key.
    let credentialID: [UInt8]?
    let publicKey: COSEKey?

    var userPresent: Bool { flags & 0x01 != 0 }
    var userVerified: Bool { flags & 0x04 != 0 }
    /// `BE`: the credential may be synced to other devices (a synced passkey).
    var backupEligible: Bool { flags & 0x08 != 0 }

    /// Parses the bytes, refusing anything left over that no flag announced.
    init(_ bytes: [UInt8]) throws {
        guard bytes.count >= 37 else { throw WebAuthnError("The authenticator data is too short.") }
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var rest = Array(bytes[37...])
        if flags & 0x40 != 0 {
            guard rest.count >= 18 else { throw WebAuthnError("The attested credential data is too short.") }
            let length = Int(rest[16]) << 8 | Int(rest[17])
            guard length >= 16, length <= 1023, rest.count >= 18 + length else {
                throw WebAuthnError("The credential id has an impossible length.")
            }
            credentialID = Array(rest[18..<18 + length])
            var decoder = CBORDecoder(rest[(18 + length)...])
            publicKey = try COSEKey(try decoder.next())
            rest = Array(rest[(18 + length + decoder.offset)...])
        } else {
            credentialID = nil
            publicKey = nil
        }
        if flags & 0x80 != 0 {
            // Extensions: one CBOR map, which Latchkey reads no further.
            guard case .map = try CBORDecoder.decode(rest) else { throw WebAuthnError("The extensions are not a map.") }
            rest = []
        }
        guard rest.isEmpty else { throw WebAuthnError("The authenticator data has bytes after its end.") }
    }
}

/// A refusal of a WebAuthn response, with what was wrong (for the log; the page says less).
struct WebAuthnError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What the server expects of a WebAuthn response: the relying party it is for and the
/// challenge it issued (WebAuthn Level 3 §7.1 and §7.2).
struct WebAuthnExpectation: Sendable {
    /// The relying party id: the issuer's host.
    let rpID: String
    /// The origin the browser must report: the issuer's scheme, host and port.
    let origin: String
    let challenge: [UInt8]
    /// Whether the authenticator must have verified the user (a PIN or a biometric), as a passkey
    /// used alone must; as a second factor after a password, presence is enough.
    let requireUserVerification: Bool

    /// Checks `clientDataJSON` (§7.1 steps 7–12): its `type`, `challenge`, `origin` and that it
    /// was not made in a cross-origin frame.
    func checkClientData(_ clientDataJSON: [UInt8], type: String) throws {
        struct ClientData: Decodable {
            var type: String
            var challenge: String
            var origin: String
            var crossOrigin: Bool?
        }
        let data: ClientData
        do { data = try JSONDecoder().decode(ClientData.self, from: Data(clientDataJSON)) } catch {
            throw WebAuthnError("The client data is not the JSON a browser makes.")
        }
        guard data.type == type else { throw WebAuthnError("The client data is for \(data.type), not \(type).") }
        guard let challenge = Base64URL.decode(data.challenge), ConstantTime.equals(Array(challenge), self.challenge) else {
            throw WebAuthnError("The client data is for another challenge.")
        }
        guard data.origin == origin else { throw WebAuthnError("The client data comes from \(data.origin), not \(origin).") }
        guard data.crossOrigin != true else { throw WebAuthnError("The response was made in a cross-origin frame.") }
    }

    /// Checks the authenticator data (§7.1 steps 13–17, §7.2 steps 15–17): the relying party's
    /// hash, the user's presence and, when required, their verification.
    func checkAuthenticatorData(_ data: AuthenticatorData) throws {
        guard ConstantTime.equals(data.rpIDHash, Array(SHA256.hash(data: Data(rpID.utf8)))) else {
            throw WebAuthnError("The authenticator data is for another relying party.")
        }
        guard data.userPresent else { throw WebAuthnError("The authenticator did not test the user's presence.") }
        guard data.userVerified || !requireUserVerification else {
            throw WebAuthnError("The authenticator did not verify the user.")
        }
    }

    /// Verifies a registration (§7.1) with attestation `none` and returns the new credential.
    func verifyRegistration(clientDataJSON: [UInt8], attestationObject: [UInt8]) throws -> (
        id: [UInt8], key: COSEKey, data: AuthenticatorData
    ) {
        try checkClientData(clientDataJSON, type: "webauthn.create")
        let object = try CBORDecoder.decode(attestationObject)
        guard case .text(let format)? = object["fmt"], case .bytes(let authData)? = object["authData"],
            case .map(let statement)? = object["attStmt"]
        else { throw WebAuthnError("The attestation object lacks fmt, authData or attStmt.") }
        // Latchkey asks for no attestation, so browsers send `none`; it trusts no authenticator model.
        guard format == "none", statement.isEmpty else { throw WebAuthnError("Attestation \(format) is not accepted.") }
        let data = try AuthenticatorData(authData)
        try checkAuthenticatorData(data)
        guard let id = data.credentialID, let key = data.publicKey else {
            throw WebAuthnError("The registration carries no credential.")
        }
        return (id, key, data)
    }

    /// Verifies an assertion (§7.2) by `key`: the signature over the authenticator data and the
    /// client data's hash.
    func verifyAssertion(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], key: COSEKey
    ) throws -> AuthenticatorData {
        try checkClientData(clientDataJSON, type: "webauthn.get")
        let data = try AuthenticatorData(authenticatorData)
        guard data.credentialID == nil else { throw WebAuthnError("An assertion carries no new credential.") }
        try checkAuthenticatorData(data)
        guard key.isValidSignature(signature, for: authenticatorData + Array(SHA256.hash(data: Data(clientDataJSON)))) else {
            throw WebAuthnError("The signature does not verify.")
        }
        return data
    }
}
