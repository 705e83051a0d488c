/// Every security event Latchkey records, one line each: the log line's message and `event`
/// field, the audit table's `event` column, the Activity page's filter, the counters
/// (``EventMetrics``) and docs/rules.md all name events from here, so a new event is one `case`.
///
/// An event's fields go with it as log metadata; never a token, code, secret or password.
public enum SecurityEvent: String, CaseIterable, Sendable, CustomStringConvertible {
    // Signing in and sessions
    case loginSucceeded = "login.succeeded"
    case loginFailed = "login.failed"
    case loginThrottled = "login.throttled"
    case loginBusy = "login.busy"
    case loginRefusedDisabled = "login.refused_disabled"
    case loginReauthenticated = "login.reauthenticated"
    case logout = "logout"
    case sessionExpired = "session.expired"
    case loginRefusedUnverified = "login.refused_unverified"
    case loginSecondFactorSucceeded = "login.second_factor_succeeded"
    case loginSecondFactorFailed = "login.second_factor_failed"
    case loginSecondFactorThrottled = "login.second_factor_throttled"
    case loginRecoveryCodeUsed = "login.recovery_code_used"
    case passkeyRefused = "passkey.refused"
    // Upstream identity providers
    case federationSignedIn = "federation.signed_in"
    case federationRefused = "federation.refused"
    case federationAccountCreated = "federation.account_created"
    case federationLinked = "federation.linked"
    case federationUnlinked = "federation.unlinked"
    // Accounts people run themselves
    case accountSignedUp = "account.signed_up"
    case accountSignUpThrottled = "account.sign_up_throttled"
    case accountInvited = "account.invited"
    case accountEmailVerificationSent = "account.email_verification_sent"
    case accountEmailVerificationThrottled = "account.email_verification_throttled"
    case accountEmailVerified = "account.email_verified"
    case accountEmailChangeRequested = "account.email_change_requested"
    case accountPasswordResetRequested = "account.password_reset_requested"
    case accountPasswordResetThrottled = "account.password_reset_throttled"
    case accountPasswordReset = "account.password_reset"
    case accountPasswordChanged = "account.password_changed"
    case accountDeleted = "account.deleted"
    case accountSecondFactorAdded = "account.second_factor_added"
    case accountSecondFactorsRemoved = "account.second_factors_removed"
    case accountRecoveryCodesRenewed = "account.recovery_codes_renewed"
    // Authorization and consent
    case authorizationPushed = "authorization.pushed"
    case authorizationPushThrottled = "authorization.push_throttled"
    case authorizationRequestUriRefused = "authorization.request_uri_refused"
    case authorizationRefusedNotOwner = "authorization.refused_not_owner"
    case authorizationAccessChanged = "authorization.access_changed"
    case consentGranted = "consent.granted"
    case consentDenied = "consent.denied"
    case consentFirstParty = "consent.first_party"
    // Tokens
    case tokenIssued = "token.issued"
    case tokenRevoked = "token.revoked"
    case codeReplayDetected = "code.replay_detected"
    case refreshReuseDetected = "refresh.reuse_detected"
    case refreshGraceReissued = "refresh.grace_reissued"
    case grantRevokedByUser = "grant.revoked_by_user"
    case grantRevokedByAdmin = "grant.revoked_by_admin"
    // Clients authenticating and describing themselves
    case clientAuthenticationFailed = "client_authentication.failed"
    case clientAuthenticationThrottled = "client_authentication.throttled"
    case clientAssertionReplayed = "client_assertion.replayed"
    case clientKeysRefused = "client_keys.refused"
    /// An assertion presented as a grant (RFC 7523 §2.1, an identity assertion grant) was refused;
    /// `reason` says why, never the assertion.
    case assertionGrantRefused = "assertion_grant.refused"
    // Back-channel logout (OpenID Connect Back-Channel Logout 1.0)
    case backchannelLogoutDelivered = "backchannel_logout.delivered"
    /// A logout token could not be delivered and was given up; `reason` says why.
    case backchannelLogoutFailed = "backchannel_logout.failed"
    case clientMetadataFetchRefused = "client_metadata.fetch_refused"
    case clientMetadataInvalid = "client_metadata.invalid"
    // The device flow (RFC 8628)
    case deviceAuthorizationRequested = "device.authorization_requested"
    case deviceUserCodeEntered = "device.user_code_entered"
    case deviceUserCodeRefused = "device.user_code_refused"
    case deviceUserCodeThrottled = "device.user_code_throttled"
    case deviceApproved = "device.approved"
    case deviceDenied = "device.denied"
    case deviceSlowDown = "device.slow_down"
    // DPoP (RFC 9449)
    case dpopProofRefused = "dpop.proof_refused"
    case dpopProofReplayed = "dpop.proof_replayed"
    case dpopKeyMismatch = "dpop.key_mismatch"
    // Administration (with `actor`)
    case clientRegistered = "client.registered"
    case clientUpdated = "client.updated"
    case clientSecretRotated = "client.secret_rotated"
    case clientDeleted = "client.deleted"
    case userCreated = "user.created"
    case userUpdated = "user.updated"
    case userDeleted = "user.deleted"
    case userRoleChanged = "user.role_changed"
    case userDisabled = "user.disabled"
    case userEnabled = "user.enabled"
    case userPasswordChanged = "user.password_changed"
    case userSessionEnded = "user.session_ended"
    case userSessionsEnded = "user.sessions_ended"
    case userSecondFactorsReset = "user.second_factors_reset"
    case userSecondFactorRequired = "user.second_factor_required"
    case scopeSaved = "scope.saved"
    case scopeDeleted = "scope.deleted"
    case resourceRegistered = "resource.registered"
    case resourceDeleted = "resource.deleted"
    case identityProviderAdded = "identity_provider.added"
    case identityProviderUpdated = "identity_provider.updated"
    case identityProviderDeleted = "identity_provider.deleted"
    case registrationTokenCreated = "registration_token.created"
    case registrationTokenDeleted = "registration_token.deleted"
    case adminForbidden = "admin.forbidden"

    public var description: String { rawValue }

    /// Whether the Activity page keeps it. `token.issued` is logged and counted only: one row per
    /// token would double the token endpoint's writes.
    public var isKept: Bool { self != .tokenIssued }
}
