import Foundation
import LatchkeyCore

/// `grant_type=urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4, §3.5): the device
/// polls with its `device_code` until the user has decided at `/device`.
///
/// Until then it answers `authorization_pending`; a poll sooner than the interval after the
/// previous one answers `slow_down` and adds 5 seconds to the interval, stored so every instance
/// holds the device to it (never on the first poll); after a denial, `access_denied`; past the
/// expiry, `expired_token`. An approved request is redeemed once, as an authorization code is,
/// and a second redemption revokes what the first issued.
struct DeviceCodeGrant: TokenGrant {
    let grantType = AuthorizationServer.deviceCodeGrantType
    let parameters: [GrantParameter] = [.required("device_code"), .optional("resource")]
    let refusal = "Only native and web applications registered for it use the device authorization grant."
    func permits(_ type: ClientType) -> Bool { type == .native || type == .web }
    /// Only for the apps registered for it.
    let isGrantedByDefault = false

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let client = request.client
        let hash = RandomToken.hash(request.required("device_code"))
        guard let device = try await services.store.deviceAuthorization(deviceCodeHash: hash), device.clientID == client.id
        else { throw OAuthError.invalidGrant("The device code is invalid.") }
        let record =
            device.status == .approved ? try await services.store.authorizationCode(hash: CodeHash(rawValue: hash)) : nil
        let redeemable = record.flatMap { $0.clientID == client.id && $0.redirectURI == grantType ? $0 : nil }
        // Redeemed before: a replay, whenever it comes (redeem revokes what the first one issued).
        if let redeemable, redeemable.consumedAt != nil {
            return try await services.redeem(redeemable, request: request, grantType: grantType)
        }
        guard services.now < device.expiresAt else {
            throw OAuthError(.expiredToken, "The device code has expired; start again with a new device authorization request.")
        }
        if let redeemable {
            return try await services.redeem(redeemable, request: request, grantType: grantType)
        }
        if device.status == .denied {
            throw OAuthError(.accessDenied, "The user denied the request.")
        }
        if let last = device.lastPolledAt, services.now < last.addingTimeInterval(TimeInterval(device.interval)) {
            let interval = device.interval + 5
            try await services.store.recordDevicePoll(deviceCodeHash: hash, at: services.now, interval: interval)
            services.event(.deviceSlowDown, ["client_id": "\(client.id)"])
            throw OAuthError(.slowDown, "Polling too often: wait \(interval) seconds between requests.")
        }
        try await services.store.recordDevicePoll(deviceCodeHash: hash, at: services.now, interval: device.interval)
        throw OAuthError(.authorizationPending, "The user has not finished yet; poll again after the interval.")
    }
}
