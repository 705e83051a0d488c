import Crypto
import Foundation
import LatchkeyCore

/// Passkeys (WebAuthn Level 3; docs/accounts.md, "Passkeys"): registration from the account's
/// security page, sign-in with a passkey alone (a discoverable credential, no username), and a
/// passkey as the second step after a password or for re-authentication. The relying party id is
/// the issuer's host and the only origin accepted is the issuer's.
///
/// Every ceremony starts with `POST /webauthn/options`, which issues a challenge bound to the
/// browser session; the response comes back in a form with that challenge, which is taken from the
/// store once (docs/threat-model.md PK2). Attestation is `none`: Latchkey trusts no authenticator
/// model, only the key it registered.
public struct Passkeys: Sendable, ServerContextual {
    let store: any PasskeyStore
    let users: any UserStore
    let sessions: BrowserSessions
    let context: ServerContext

    /// How long a challenge may be answered.
    public static let challengeLifetime: TimeInterval = 5 * 60

    /// The relying party id (WebAuthn §5.1.2): the issuer's host, in lower case.
    public var relyingPartyID: String { (URLComponents(string: issuer)?.host ?? issuer).lowercased() }

    /// The issuer's origin as browsers serialise it (`scheme://host[:port]`, lower case, no default
    /// port): the only one a response may come from.
    public var origin: String {
        guard let components = URLComponents(string: issuer), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased()
        else { return issuer }
        let port = components.port.flatMap { port in
            (scheme == "https" && port == 443) || (scheme == "http" && port == 80) ? nil : port
        }
        return scheme + "://" + host + (port.map { ":\($0)" } ?? "")
    }

    /// Whether browsers can use passkeys here: WebAuthn needs a relying party id that is a domain
    /// name (not an IP address), in a secure context (`https`, or `http://localhost`).
    public var available: Bool {
        guard let components = URLComponents(string: issuer), let host = components.host, !host.isEmpty,
            !host.contains(":"), host.contains(where: { $0.isLetter })
        else { return false }
        return components.scheme == "https" || host == "localhost"
    }

    /// Whether the account has a passkey.
    public func hasPasskey(_ userID: UserID) async throws -> Bool { try await !store.passkeys(userID: userID).isEmpty }

    // MARK: Options

    /// `POST /webauthn/options` (fields `csrf_token`, `purpose`): the options for
    /// `navigator.credentials.create` or `.get` as JSON, with base64url for every byte string.
    /// - Returns: `nil` (403) without the session's CSRF token, or when nobody the purpose needs
    ///   is signed in.
    public func options(_ form: FormParameters, session: BrowserSession) async throws -> String? {
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form),
            let purpose = form["purpose"].flatMap(PasskeyPurpose.init(rawValue:))
        else { return nil }
        let challenge = RandomToken.randomBase64URL(byteCount: 32)
        var user: User?
        switch purpose {
        case .registration:
            guard let signedIn = try await sessions.signedInUser(session) else { return nil }
            user = signedIn
        case .confirmation:
            guard let owing = try await confirmingUser(session) else { return nil }
            user = owing
        case .reauthentication:
            guard let signedIn = try await sessions.signedInUser(session) else { return nil }
            user = signedIn
        case .signIn:
            user = nil
        }
        try await store.insertPasskeyChallenge(
            PasskeyChallenge(
                hash: PasskeyChallengeHash(of: challenge), sessionIDHash: session.idHash, purpose: purpose,
                userID: user?.id, expiresAt: now.addingTimeInterval(Self.challengeLifetime)))
        let timeout = Int(Self.challengeLifetime * 1000)
        let rp = #"{"id":"# + JSONText.quote(relyingPartyID) + #","name":"# + JSONText.quote(relyingPartyID) + "}"
        switch purpose {
        case .registration:
            let user = user!
            let existing = try await store.passkeys(userID: user.id).map {
                #"{"type":"public-key","id":"# + JSONText.quote($0.credentialID.rawValue) + "}"
            }
            let params = COSEKey.Algorithm.allCases.map { #"{"type":"public-key","alg":\#($0.rawValue)}"# }
            return #"{"publicKey":{"challenge":"# + JSONText.quote(challenge) + #","rp":"# + rp
                + #","user":{"id":"# + JSONText.quote(Base64URL.encode(Array(user.id.rawValue.utf8)))
                + #","name":"# + JSONText.quote(user.username.rawValue) + #","displayName":"#
                + JSONText.quote(user.displayName ?? user.username.rawValue) + "}"
                + #","pubKeyCredParams":["# + params.joined(separator: ",") + "]"
                + #","excludeCredentials":["# + existing.joined(separator: ",") + "]"
                + #","authenticatorSelection":{"residentKey":"required","requireResidentKey":true,"#
                + #""userVerification":"preferred"},"attestation":"none","timeout":\#(timeout)}}"#
        case .signIn, .confirmation, .reauthentication:
            var allowed: [String] = []
            if let user {
                allowed = try await store.passkeys(userID: user.id).map {
                    #"{"type":"public-key","id":"# + JSONText.quote($0.credentialID.rawValue) + "}"
                }
            }
            return #"{"publicKey":{"challenge":"# + JSONText.quote(challenge) + #","rpId":"#
                + JSONText.quote(relyingPartyID) + #","allowCredentials":["# + allowed.joined(separator: ",") + "]"
                + #","userVerification":"\#(purpose.needsUserVerification ? "required" : "preferred")","#
                + #""timeout":\#(timeout)}}"#
        }
    }

    /// The user a confirmation (the second step, a step-up) is for: the one whose password the
    /// session checked, within ``SecondFactors/secondStepLifetime``, or the one signed in.
    func confirmingUser(_ session: BrowserSession) async throws -> User? {
        let id: UserID
        if let owed = session.secondFactorUserID {
            guard session.createdAt.addingTimeInterval(SecondFactors.secondStepLifetime) > now else { return nil }
            id = owed
        } else if let signedIn = session.userID {
            id = signedIn
        } else {
            return nil
        }
        guard let user = try await users.user(id: id), user.disabledAt == nil else { return nil }
        return user
    }

    /// Takes the form's challenge, if this session was issued it for `purpose` and it is unused.
    func takeChallenge(_ form: FormParameters, session: BrowserSession, purpose: PasskeyPurpose) async throws
        -> (challenge: [UInt8], record: PasskeyChallenge)?
    {
        guard let text = form["challenge"], let bytes = Base64URL.decode(text),
            let record = try await store.takePasskeyChallenge(
                hash: PasskeyChallengeHash(of: text), sessionIDHash: session.idHash, at: now),
            record.purpose == purpose
        else { return nil }
        return (Array(bytes), record)
    }

    static func bytes(_ form: FormParameters, _ name: String) -> [UInt8]? {
        guard let text = form[name], text.utf8.count <= 16_384 else { return nil }
        return Base64URL.decode(text).map(Array.init)
    }

    // MARK: Registration

    /// Verifies a registration (fields `challenge`, `client_data`, `attestation_object`, `name`)
    /// for `user` and stores the passkey.
    /// - Returns: `nil` when it is stored, else what was wrong, in words for the page.
    func register(_ form: FormParameters, session: BrowserSession, user: User) async throws -> String? {
        guard let (challenge, record) = try await takeChallenge(form, session: session, purpose: .registration),
            record.userID == user.id
        else { return "The passkey request expired. Try again." }
        guard let clientData = Self.bytes(form, "client_data"), let attestation = Self.bytes(form, "attestation_object")
        else { return "The browser sent no passkey." }
        let expectation = WebAuthnExpectation(
            rpID: relyingPartyID, origin: origin, challenge: challenge, requireUserVerification: false)
        let registered: (id: [UInt8], key: COSEKey, data: AuthenticatorData)
        do {
            registered = try expectation.verifyRegistration(clientDataJSON: clientData, attestationObject: attestation)
        } catch let error as WebAuthnError {
            event(.passkeyRefused, ["user_id": "\(user.id)", "reason": "\(error.description)"])
            return "The passkey could not be checked."
        } catch {
            event(.passkeyRefused, ["user_id": "\(user.id)", "reason": "\(error)"])
            return "The passkey could not be checked."
        }
        let name = String((form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).prefix(64))
        do {
            try await store.insertPasskey(
                Passkey(
                    credentialID: CredentialID(rawValue: Base64URL.encode(registered.id)), userID: user.id,
                    name: name.isEmpty ? "Passkey" : name, publicKey: registered.key.storeValue,
                    signCount: Int(registered.data.signCount), backupEligible: registered.data.backupEligible,
                    createdAt: now))
        } catch StoreError.conflict {
            return "This passkey is registered already."
        }
        event(.accountSecondFactorAdded, ["user_id": "\(user.id)", "kind": "passkey"])
        return nil
    }

    // MARK: Assertions

    /// Verifies an assertion (fields `challenge`, `credential_id`, `client_data`,
    /// `authenticator_data`, `signature`, and `user_handle` for a sign-in) against the passkey it
    /// names, and records the use.
    /// - Parameter user: the account it must belong to (a confirmation); `nil` for a sign-in, where
    ///   the passkey names its account and must have verified the user.
    /// - Returns: the account and the passkey, or `nil`.
    func verifyAssertion(_ form: FormParameters, session: BrowserSession, purpose: PasskeyPurpose, user: User?)
        async throws -> (User, Passkey)?
    {
        guard let (challenge, record) = try await takeChallenge(form, session: session, purpose: purpose),
            record.userID == user?.id,
            let id = form["credential_id"], let clientData = Self.bytes(form, "client_data"),
            let authenticatorData = Self.bytes(form, "authenticator_data"), let signature = Self.bytes(form, "signature"),
            let passkey = try await store.passkey(credentialID: CredentialID(rawValue: id)),
            let key = COSEKey(storeValue: passkey.publicKey)
        else { return nil }
        let owner: User
        if let user {
            guard passkey.userID == user.id else { return nil }
            owner = user
        } else {
            // The user handle the authenticator kept must be the passkey's account's (§7.2 step 6).
            // An account that must confirm its address first signs in with nothing else either.
            guard let handle = Self.bytes(form, "user_handle"),
                String(decoding: handle, as: UTF8.self) == passkey.userID.rawValue,
                let found = try await users.user(id: passkey.userID), found.disabledAt == nil,
                !found.mustVerifyEmail || found.emailVerified
            else { return nil }
            owner = found
        }
        let expectation = WebAuthnExpectation(
            rpID: relyingPartyID, origin: origin, challenge: challenge,
            requireUserVerification: purpose.needsUserVerification)
        let data: AuthenticatorData
        do {
            data = try expectation.verifyAssertion(
                clientDataJSON: clientData, authenticatorData: authenticatorData, signature: signature, key: key)
        } catch {
            event(.passkeyRefused, ["user_id": "\(owner.id)", "reason": "\(error)"])
            return nil
        }
        guard try await store.usePasskey(credentialID: passkey.credentialID, signCount: Int(data.signCount), at: now) else {
            event(.passkeyRefused, ["user_id": "\(owner.id)", "reason": "the signature counter did not move forward"])
            return nil
        }
        return (owner, passkey)
    }

    /// The methods a passkey proves (RFC 8176): a hardware-bound or synced key, the user's presence,
    /// and with a first factor before it (`after`: a password, or an upstream provider's sign-in),
    /// or the user's verification, more than one factor.
    static func methods(_ passkey: Passkey, after first: AuthenticationMethods?) -> AuthenticationMethods {
        let key = passkey.backupEligible ? "swk" : "hwk"
        return first.map { $0.adding(secondFactor: key) } ?? AuthenticationMethods([key, "user", "mfa"])
    }

    /// `POST /login/passkey`: signs in with a passkey alone, replacing the session with a fresh one.
    public func signIn(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SecondStepResult
    {
        let pendingID = form.isRepeated("request") ? nil : form["request"]
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form) else { return .forbidden }
        guard let (user, passkey) = try await verifyAssertion(form, session: session, purpose: .signIn, user: nil) else {
            return .failed(pendingID: pendingID)
        }
        let fresh = try await sessions.signIn(
            user, with: Self.methods(passkey, after: nil), replacing: session, keepingSignInTime: false)
        event(.loginSucceeded, ["user_id": "\(user.id)", "client_address": "\(clientAddress)", "method": "passkey"])
        return .signedIn(fresh, pendingID: pendingID)
    }

    /// A passkey as the second step, or a step-up, for the session's user.
    func confirm(_ form: FormParameters, session: BrowserSession, user: User) async throws -> SessionContext? {
        guard let (_, passkey) = try await verifyAssertion(form, session: session, purpose: .confirmation, user: user) else {
            return nil
        }
        return try await sessions.signIn(
            user, with: Self.methods(passkey, after: session.amr ?? .password), replacing: session, keepingSignInTime: true)
    }
}
