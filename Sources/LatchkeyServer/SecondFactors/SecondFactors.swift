import Foundation
import LatchkeyCore

/// What the second sign-in step's form (`POST /login/second-factor`) comes to.
public enum SecondStepResult: Sendable {
    /// 403: the form has no valid CSRF token, or the session owes no second factor.
    case forbidden
    /// The password step is too old, or the account is gone: sign in again.
    case expired(pendingID: String?)
    /// The code was wrong, or used already: show the form again.
    case failed(pendingID: String?)
    /// 429: too many wrong codes for this account or from this address; the code was not checked.
    case throttled(pendingID: String?, retryAfter: Int)
    /// Signed in with both factors in a fresh session; continue with the pending request, if any.
    case signedIn(SessionContext, pendingID: String?)
}

/// A TOTP authenticator being set up: what the set-up page shows.
public struct TOTPEnrolment: Sendable {
    /// The unconfirmed factor's id, which the confirmation form carries.
    public var factorID: SecondFactorID
    /// The key in base32, in groups of four, for typing into an app.
    public var keyText: String
    /// The `otpauth://` URI, drawn as a QR code.
    public var provisioningURI: String
}

/// What an account's security page shows of its second factors.
public struct SecondFactorSummary: Sendable {
    /// The confirmed authenticator, if any.
    public var authenticator: SecondFactor?
    /// Unused recovery codes.
    public var recoveryCodesLeft: Int
    /// Whether the server's policy or an administrator requires a second factor of this account.
    public var required: Bool
    /// The account's passkeys, oldest first.
    public var passkeys: [Passkey] = []
}

/// Second factors (docs/accounts.md, "Second factors"): the second step of sign-in and step-up
/// to it, the set-up of a TOTP authenticator (RFC 6238) with recovery codes, and the policy on
/// who needs one. It touches second factors, sessions and throttles, and passkeys through ``Passkeys``.
///
/// A TOTP key is sealed with the key-encryption key, bound to its row's id; a recovery code is
/// kept as its SHA-256. Each code works once: its time step, or the recovery code, is used up
/// in one conditional statement (docs/threat-model.md MF2). Wrong codes are counted per account
/// and per client address before they are checked, as passwords are (MF3).
public struct SecondFactors: Sendable, ServerContextual {
    let factors: any SecondFactorStore
    let throttles: any ThrottleStore
    let sessions: BrowserSessions
    let keyEncryptionKey: KeyEncryptionKey
    /// Tells the account's address when its second factors change; `nil` when the server sends no e-mail.
    let mailer: AccountMailer?
    /// Passkeys, which also serve as the second step.
    public let passkeys: Passkeys
    let context: ServerContext

    /// How long after the password the second step may come.
    public static let secondStepLifetime: TimeInterval = 10 * 60
    /// How many recovery codes an account gets.
    public static let recoveryCodeCount = 10
    /// The characters of a recovery code: no `0 O 1 I L`, which people misread.
    static let recoveryAlphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789".utf8)

    /// Whether the server's policy or an administrator requires `user` to use a second factor.
    public func isRequired(for user: User) -> Bool { configuration.requireSecondFactor.requires(user) }

    /// The account's confirmed authenticator, if it has one.
    public func authenticator(of userID: UserID) async throws -> SecondFactor? {
        try await factors.secondFactors(userID: userID).last { $0.kind == .totp && $0.isActive }
    }

    public func summary(of user: User) async throws -> SecondFactorSummary {
        let all = try await factors.secondFactors(userID: user.id)
        return SecondFactorSummary(
            authenticator: all.last { $0.kind == .totp && $0.isActive },
            recoveryCodesLeft: all.count { $0.kind == .recoveryCode && $0.isActive }, required: isRequired(for: user),
            passkeys: try await passkeys.store.passkeys(userID: user.id))
    }

    // MARK: The second step

    /// The user a session's second step is for: the one whose password it checked (within
    /// ``secondStepLifetime``), or, for a step-up, the one signed in.
    public func secondStepUser(_ session: BrowserSession) async throws -> User? {
        try await passkeys.confirmingUser(session)
    }

    /// `POST /login/second-factor` (field `code`): a code from the authenticator, or a recovery
    /// code. Right, the session is replaced by a fresh one signed in with both factors, which keeps
    /// the pending requests.
    public func verify(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> SecondStepResult
    {
        let pendingID = form.isRepeated("request") ? nil : form["request"]
        guard form.repeatedNames.isEmpty, session.isCSRFToken(of: form) else { return .forbidden }
        guard session.secondFactorUserID != nil || session.userID != nil else { return .forbidden }
        // A session that used a second factor already gains nothing from another code.
        guard session.userID == nil || !(session.amr ?? .password).isMultiFactor else { return .forbidden }
        guard let user = try await secondStepUser(session) else { return .expired(pendingID: pendingID) }
        let accountKey = ThrottleKey(rawValue: "second-factor:" + user.id.rawValue)
        let addressKey = ThrottleKey(rawValue: "second-factor-address:" + ClientAddressBlock.of(clientAddress))
        let limits = [
            (accountKey, configuration.signInAttemptsPerAccount), (addressKey, configuration.signInAttemptsPerAddress),
        ]
        // Counted before the code is checked, so simultaneous guesses cannot all slip under the limit.
        var counted: [(limit: Int, window: ThrottleWindow)] = []
        for (key, limit) in limits {
            counted.append((limit, try await throttles.recordFailure(key: key, at: now, window: configuration.signInWindow)))
        }
        if let over = counted.first(where: { $0.window.failures > $0.limit }) {
            event(.loginSecondFactorThrottled, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .throttled(pendingID: pendingID, retryAfter: over.window.secondsLeft(at: now))
        }
        let fresh: SessionContext
        if form["credential_id"] != nil {
            // A passkey instead of a code (its fields come from the page's script).
            guard let confirmed = try await passkeys.confirm(form, session: session, user: user) else {
                event(.loginSecondFactorFailed, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
                return .failed(pendingID: pendingID)
            }
            fresh = confirmed
        } else {
            guard let method = try await use(form["code"] ?? "", of: user.id) else {
                event(.loginSecondFactorFailed, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
                return .failed(pendingID: pendingID)
            }
            if method == .recoveryCode {
                event(.loginRecoveryCodeUsed, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            }
            fresh = try await signIn(user, replacing: session)
        }
        try await throttles.clearFailures(key: accountKey)
        try await throttles.forgiveFailure(key: addressKey, at: now)
        event(.loginSecondFactorSucceeded, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
        return .signedIn(fresh, pendingID: pendingID)
    }

    /// Uses `code` as the account's authenticator code, or else as one of its recovery codes.
    /// - Returns: which kind it was, or `nil` when it is neither (or used already).
    func use(_ code: String, of userID: UserID) async throws -> SecondFactorKind? {
        let all = try await factors.secondFactors(userID: userID)
        if let authenticator = all.last(where: { $0.kind == .totp && $0.isActive }),
            let step = try totp(of: authenticator).matchingStep(code, at: now)
        {
            return try await factors.useTOTP(id: authenticator.id, step: step, at: now) ? .totp : nil
        }
        let normalized = Self.normalizedRecoveryCode(code)
        guard normalized.count == 16, all.contains(where: { $0.kind == .recoveryCode && $0.isActive }) else { return nil }
        return try await factors.useRecoveryCode(userID: userID, hash: RandomToken.hash(normalized), at: now)
            ? .recoveryCode : nil
    }

    /// Replaces `session` with a fresh one signed in as `user` with both factors: the first one it
    /// recorded (a password, or an upstream provider's sign-in) and a one-time code.
    func signIn(_ user: User, replacing session: BrowserSession) async throws -> SessionContext {
        try await sessions.signIn(
            user, with: (session.amr ?? .password).adding(secondFactor: "otp"), replacing: session, keepingSignInTime: true)
    }

    /// Whether the account has a second factor it can sign in with: an authenticator or a passkey.
    public func hasSecondFactor(_ userID: UserID) async throws -> Bool { try await sessions.hasSecondFactor(userID) }

    /// Whether `user` must use a second factor now: one is set up, or the policy requires one.
    public func needsTwoFactors(_ user: User) async throws -> Bool {
        if isRequired(for: user) { return true }
        return try await hasSecondFactor(user.id)
    }

    // MARK: Setting up an authenticator

    /// Starts setting up an authenticator for `user`: a new key, stored sealed and unconfirmed; an
    /// earlier unconfirmed one is dropped, so a key another session saw is never the one confirmed
    /// (MF5).
    public func beginTOTP(for user: User) async throws -> TOTPEnrolment {
        let id = SecondFactorID(rawValue: TimeOrderedID.make(at: now))
        let totp = TOTP.generateKey()
        try await factors.insertPendingTOTP(
            SecondFactor(
                id: id, userID: user.id, kind: .totp, name: "Authenticator app",
                secret: try keyEncryptionKey.seal(Data(totp.key), kid: Self.sealingContext(id)), createdAt: now))
        return TOTPEnrolment(
            factorID: id, keyText: totp.keyText,
            provisioningURI: totp.provisioningURI(issuer: siteName, account: user.username.rawValue))
    }

    /// The enrolment of an unconfirmed authenticator again (the set-up page reloaded, or shown
    /// again after a wrong code), or `nil` when it is gone.
    public func enrolment(_ id: SecondFactorID, of user: User) async throws -> TOTPEnrolment? {
        guard
            let factor = try await factors.secondFactors(userID: user.id).first(where: {
                $0.id == id && $0.kind == .totp && $0.confirmedAt == nil
            })
        else { return nil }
        let totp = try totp(of: factor)
        return TOTPEnrolment(
            factorID: id, keyText: totp.keyText,
            provisioningURI: totp.provisioningURI(issuer: siteName, account: user.username.rawValue))
    }

    /// Confirms the authenticator `id` of `user` with its first `code`; it replaces an older one,
    /// and ten new recovery codes replace the old. The session is replaced by one signed in with
    /// both factors, which the code just proved.
    /// - Returns: the recovery codes to show once and the fresh session, or `nil` for a wrong code.
    public func confirmTOTP(
        _ id: SecondFactorID, code: String, user: User, session: BrowserSession
    ) async throws -> (recoveryCodes: [String], session: SessionContext)? {
        guard
            let factor = try await factors.secondFactors(userID: user.id).first(where: {
                $0.id == id && $0.kind == .totp && $0.confirmedAt == nil
            }),
            let step = try totp(of: factor).matchingStep(code, at: now)
        else { return nil }
        let (codes, records) = makeRecoveryCodes(for: user.id)
        guard try await factors.confirmTOTP(id: id, userID: user.id, step: step, recoveryCodes: records, at: now) else {
            return nil
        }
        event(.accountSecondFactorAdded, ["user_id": "\(user.id)", "kind": "totp"])
        return (codes, try await signIn(user, replacing: session))
    }

    /// New recovery codes for `userID`, replacing the old ones.
    public func renewRecoveryCodes(of userID: UserID) async throws -> [String] {
        let (codes, records) = makeRecoveryCodes(for: userID)
        try await factors.replaceRecoveryCodes(userID: userID, with: records)
        event(.accountRecoveryCodesRenewed, ["user_id": "\(userID)"])
        return codes
    }

    /// Removes every second factor of the account (the account page's "Turn off", by its owner).
    public func removeAll(of userID: UserID) async throws {
        try await factors.deleteSecondFactors(userID: userID)
        event(.accountSecondFactorsRemoved, ["user_id": "\(userID)"])
    }

    // MARK: Helpers

    /// Ten recovery codes as shown (`XXXX-XXXX-XXXX-XXXX`: 16 of 31 characters, about 79 bits) and their stored records.
    func makeRecoveryCodes(for userID: UserID) -> ([String], [SecondFactor]) {
        var generator = SystemRandomNumberGenerator()
        var shown: [String] = []
        var records: [SecondFactor] = []
        for _ in 0..<Self.recoveryCodeCount {
            let bytes = (0..<16).map { _ in
                Self.recoveryAlphabet[Int.random(in: 0..<Self.recoveryAlphabet.count, using: &generator)]
            }
            let code = String(decoding: bytes, as: UTF8.self)
            shown.append(stride(from: 0, to: 16, by: 4).map { String(code.dropFirst($0).prefix(4)) }.joined(separator: "-"))
            records.append(
                SecondFactor(
                    id: SecondFactorID(rawValue: TimeOrderedID.make(at: now)), userID: userID, kind: .recoveryCode,
                    name: "", secret: RandomToken.hash(code), createdAt: now))
        }
        return (shown, records)
    }

    /// A recovery code as typed, without spaces and dashes, in capitals.
    static func normalizedRecoveryCode(_ code: String) -> String {
        String(code.uppercased().filter { $0 != "-" && $0 != " " }.prefix(64))
    }

    func totp(of factor: SecondFactor) throws -> TOTP {
        TOTP(key: Array(try keyEncryptionKey.open(factor.secret, kid: Self.sealingContext(factor.id))))
    }

    /// What a sealed key is bound to: its row, so a sealed key copied to another row does not open.
    static func sealingContext(_ id: SecondFactorID) -> String { "second-factor:" + id.rawValue }

    /// The name authenticator apps list the account under: the issuer's host.
    public var siteName: String { URL(string: issuer)?.host ?? issuer }
}
