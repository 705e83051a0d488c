import Foundation
import LatchkeyCore

/// What `POST /device` leads to.
public enum DeviceEntryResult: Sendable {
    /// 403: a form without a valid CSRF token.
    case forbidden(String)
    /// The entry form again, with a message: the code is malformed, unknown, expired or used.
    case retry(String)
    /// 429: too many wrong codes from this address, or from everyone; try again after this many seconds.
    case throttled(retryAfter: Int)
    /// The code is right: on to sign-in or consent, as for a browser-based request.
    case proceed(AuthorizationStep)
}

extension AuthorizationEndpoint {
    /// Where the browser goes once a device request is decided: a page saying to go back to the device.
    static let deviceApprovedPage = "/device?result=approved"
    static let deviceDeniedPage = "/device?result=denied"

    /// `POST /device` (RFC 8628 §3.3): the user typed a `user_code`. A right code claims the
    /// request for this browser session (no other session can enter it after; this one may again,
    /// after a reload), then the usual sign-in and consent follow; the consent page is always
    /// shown, since the request started somewhere else (§5.4).
    ///
    /// Guessing is bounded (§5.1: the code space is only 20⁸). Every entry from a client address
    /// is counted before any code is looked up, in one atomic step, so a burst of parallel guesses
    /// cannot slip past the limit; wrong codes from everyone together are counted too. Past either
    /// limit no code is looked up at all.
    public func enterUserCode(_ form: FormParameters, session: BrowserSession, clientAddress: String) async throws
        -> DeviceEntryResult
    {
        guard !form.isRepeated("csrf_token"), !form.isRepeated("user_code") else { return .forbidden("The form was malformed.") }
        guard let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken) else {
            return .forbidden("This form has expired or did not come from this site. Reload the page and try again.")
        }
        guard let typed = form["user_code"], let userCode = UserCode.normalize(typed) else {
            return .retry("A code is eight letters, like BCDF-GHJK. Check what your device shows and try again.")
        }
        let address = ThrottleKey(rawValue: "device:address:" + ClientAddressBlock.of(clientAddress))
        let everyone = ThrottleKey(rawValue: "device:all")
        var over = try await throttles.recordFailure(key: address, at: now, window: configuration.signInWindow)
        if over.failures <= configuration.userCodeAttemptsPerAddress {
            guard let overall = try await throttles.failures(key: everyone, at: now),
                overall.failures >= configuration.userCodeAttemptsOverall
            else { return try await claim(userCode, session: session, clientAddress: clientAddress) }
            over = overall
        }
        event(.deviceUserCodeThrottled, ["client_address": "\(clientAddress)"])
        return .throttled(retryAfter: over.secondsLeft(at: now))
    }

    private func claim(_ userCode: String, session: BrowserSession, clientAddress: String) async throws -> DeviceEntryResult {
        guard
            let device = try await devices.claimDeviceAuthorization(
                userCodeHash: UserCode.hash(userCode), by: session.idHash, at: now),
            let client = try await clients.client(id: device.clientID)
        else {
            _ = try await throttles.recordFailure(
                key: ThrottleKey(rawValue: "device:all"), at: now, window: configuration.signInWindow)
            event(.deviceUserCodeRefused, ["client_address": "\(clientAddress)"])
            return .retry("That code is not right, has expired, or was already entered. Check your device, or start again there.")
        }
        event(.deviceUserCodeEntered, ["client_id": "\(client.id)", "client_address": "\(clientAddress)"])
        let pending = PendingAuthorization(
            id: PendingRequestID(rawValue: RandomToken.generate(.pendingRequest)), sessionIDHash: session.idHash,
            clientID: client.id, redirectURI: issuer + "/device", redirectURIParameter: nil, scope: device.scope, state: nil,
            codeChallenge: nil, promptConsent: true, resources: device.resources, deviceCodeHash: device.deviceCodeHash,
            createdAt: now, expiresAt: min(device.expiresAt, now.addingTimeInterval(configuration.pendingRequestLifetime)))
        try await pendingRequests.insertPendingAuthorization(pending)
        guard let userID = signedInUser(session, for: pending) else {
            return .proceed(.signIn(pendingID: pending.id.rawValue, loginHint: nil, again: false))
        }
        return .proceed(try await proceed(pending, client: client, userID: userID, session: session))
    }

    /// Refuses a pending request: an error redirect to the client, or for a device request, the
    /// device's next poll answers `access_denied` and the browser is told so.
    func refuse(_ error: OAuthError, _ pending: PendingAuthorization) async throws -> AuthorizationStep {
        guard let deviceCodeHash = pending.deviceCodeHash else { return errorResponse(error, for: pending) }
        _ = try await devices.settleDeviceAuthorization(deviceCodeHash: deviceCodeHash, status: .denied)
        event(.deviceDenied, ["client_id": "\(pending.clientID)", "reason": "\(error.code)"])
        return .redirect(Self.deviceDeniedPage)
    }

    /// Approves a device request: the grant waits, as an authorization code stored under the
    /// device code's hash, for the device's next poll to redeem it (once).
    func approveDevice(
        _ pending: PendingAuthorization, deviceCodeHash: String, user: DecidingUser, scope: ScopeSet, authTime: Date
    )
        async throws -> AuthorizationStep
    {
        let userID = user.id
        guard let device = try await devices.deviceAuthorization(deviceCodeHash: deviceCodeHash), device.expiresAt > now,
            device.status == .claimed
        else {
            return .redirect(Self.deviceDeniedPage)
        }
        // The code first, then the approval: a revocation of the user's access that comes between
        // deletes the code while the request is not yet approved, and an approved request whose
        // code is gone never gives tokens (docs/threat-model.md RV3).
        do {
            let stored = try await codes.insertAuthorizationCode(
                AuthorizationCodeRecord(
                    codeHash: CodeHash(rawValue: deviceCodeHash), clientID: pending.clientID, userID: userID,
                    redirectURI: AuthorizationServer.deviceCodeGrantType, redirectURIParameter: nil, scope: scope,
                    codeChallenge: nil,
                    createdAt: now, expiresAt: device.expiresAt, nonce: nil, authTime: authTime, resources: pending.resources,
                    amr: user.amr),
                whileAccessEpoch: user.accessEpoch)
            guard stored else { return try await refuse(Self.accessChanged, pending) }
        } catch StoreError.conflict {
            return .redirect(Self.deviceDeniedPage)
        }
        // Decided once: a second consent page for the same request (a reload) finds it settled.
        guard try await devices.settleDeviceAuthorization(deviceCodeHash: deviceCodeHash, status: .approved) else {
            return .redirect(Self.deviceDeniedPage)
        }
        event(.deviceApproved, ["client_id": "\(pending.clientID)", "user_id": "\(userID)"])
        return .redirect(Self.deviceApprovedPage)
    }
}
