import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A device authorization request under way (RFC 8628 §3.2): show ``userCode`` and
/// ``verificationURI`` (or a QR code of ``verificationURIComplete``), then poll with
/// ``OAuthClient/pollForTokens(_:requestedScope:sleep:)``.
public struct DeviceAuthorizationSession: Sendable, Equatable {
    /// `device_code`: secret; only the token endpoint sees it.
    public var deviceCode: String
    /// `user_code`: what the user types.
    public var userCode: String
    /// `verification_uri`: where the user types it.
    public var verificationURI: URL
    /// `verification_uri_complete`: the same page with the code filled in, when the server gives one.
    public var verificationURIComplete: URL?
    /// When both codes stop working (from `expires_in`).
    public var expiresAt: Date
    /// `interval`: seconds between polls (5 when the server does not say, §3.2).
    public var interval: Int
}

extension OAuthClient {
    /// `POST` to the provider's `device_authorization_endpoint` (RFC 8628 §3.1).
    /// - Parameters:
    ///   - scope: the scopes to ask for (`scope`).
    ///   - additionalParameters: for example `resource` (RFC 8707).
    /// - Throws: ``ClientError``.
    public func requestDeviceAuthorization(scope: [String], additionalParameters: [(String, String)] = []) async throws
        -> DeviceAuthorizationSession
    {
        guard let endpoint = provider.deviceAuthorizationEndpoint else {
            throw ClientError.invalidResponse("the provider has no device_authorization_endpoint")
        }
        var parameters = additionalParameters
        if !scope.isEmpty { parameters.insert(("scope", scope.joined(separator: " ")), at: 0) }
        let sentAt = Date()
        let (data, response) = try await send(try authenticatedPost(endpoint, parameters))
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        if let error = Self.serverError(in: object) { throw error }
        guard status == 200, let object, let deviceCode = object["device_code"] as? String,
            let userCode = object["user_code"] as? String,
            let verificationURI = (object["verification_uri"] as? String).flatMap(URL.init(string:)),
            let expiresIn = (object["expires_in"] as? NSNumber)?.doubleValue
        else {
            throw ClientError.invalidResponse("the device authorization endpoint answered \(status) without the codes")
        }
        return DeviceAuthorizationSession(
            deviceCode: deviceCode, userCode: userCode, verificationURI: verificationURI,
            verificationURIComplete: (object["verification_uri_complete"] as? String).flatMap(URL.init(string:)),
            expiresAt: sentAt.addingTimeInterval(expiresIn), interval: max(1, (object["interval"] as? NSNumber)?.intValue ?? 5))
    }

    /// Polls the token endpoint (RFC 8628 §3.4) until the user decides: waits ``DeviceAuthorizationSession/interval``
    /// seconds before each poll, 5 more after each `slow_down` (§3.5), twice as long after a poll
    /// that could not reach the server, and stops at the codes' expiry.
    /// - Parameters:
    ///   - authorization: the session ``requestDeviceAuthorization(scope:additionalParameters:)`` answered.
    ///   - requestedScope: what was asked, for a response that leaves `scope` out.
    ///   - sleep: how to wait (a test may shorten it).
    /// - Throws: ``ClientError``: `.server(access_denied)` when the user said no, `.timedOut` at expiry.
    public func pollForTokens(
        _ authorization: DeviceAuthorizationSession, requestedScope: [String],
        sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async throws -> TokenSet {
        var interval = authorization.interval
        while true {
            try await sleep(.seconds(interval))
            guard Date() < authorization.expiresAt else { throw ClientError.timedOut }
            do {
                var tokens = try await tokenRequest(
                    [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", authorization.deviceCode)],
                    requestedScope: ScopeSet(requestedScope))
                if let idToken = tokens.idToken {
                    tokens.identity = try await idTokens.validate(idToken, nonce: nil, accessToken: tokens.accessToken)
                }
                return tokens
            } catch ClientError.server(let error) where error.code == .authorizationPending {
                continue
            } catch ClientError.server(let error) where error.code == .slowDown {
                interval += 5
            } catch ClientError.server(let error) where error.code == .expiredToken {
                throw ClientError.timedOut
            } catch ClientError.network {
                // §3.5: back off while the server cannot be reached, until the codes expire.
                interval = min(interval * 2, 60)
            }
        }
    }
}
