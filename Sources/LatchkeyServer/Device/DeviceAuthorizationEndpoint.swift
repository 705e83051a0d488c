import Foundation
import LatchkeyCore

/// The device authorization response (RFC 8628 §3.2).
public struct DeviceAuthorizationResponse: Sendable, Equatable, Codable {
    /// `device_code`: what the device polls the token endpoint with (`lk_dc_` and 256 random bits).
    public var deviceCode: String
    /// `user_code`: what the user types at ``verificationURI``, as `XXXX-XXXX`.
    public var userCode: String
    /// `verification_uri`: the server's `/device` page.
    public var verificationURI: String
    /// `verification_uri_complete`: the same page with the code filled in, for a QR code.
    public var verificationURIComplete: String
    /// `expires_in`: seconds until both codes stop working.
    public var expiresIn: Int
    /// `interval`: seconds the device must wait between polls.
    public var interval: Int

    enum CodingKeys: String, CodingKey {
        case deviceCode = "device_code", userCode = "user_code", verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete", expiresIn = "expires_in", interval
    }

    /// The JSON body, keys sorted.
    public var jsonBody: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension AuthorizationServer {
    /// `grant_type` of the device authorization grant (RFC 8628 §3.4).
    public static let deviceCodeGrantType = GrantTypes.deviceCode
}

/// `POST /oauth2/device_authorization` (RFC 8628 §3.1): stores device requests, and touches
/// nothing else but client authentication and the scope and resource rules.
public struct DeviceAuthorizationEndpoint: Sendable, ServerContextual {
    let clientAuthentication: ClientAuthentication
    let devices: any DeviceAuthorizationStore
    let issuance: TokenIssuance
    let context: ServerContext

    /// `POST /oauth2/device_authorization` (RFC 8628 §3.1): the client authenticates as at the
    /// token endpoint (`client_id` alone for a public client) and must be registered for the
    /// grant; `scope` and `resource` are checked as the authorization endpoint checks them. Errors
    /// are the token endpoint's JSON (§3.2).
    public func authorizeDevice(_ request: TokenRequest) async -> Result<DeviceAuthorizationResponse, TokenEndpointError> {
        do {
            return .success(try await handleDeviceAuthorization(request))
        } catch {
            return .failure(error)
        }
    }

    private func handleDeviceAuthorization(_ request: TokenRequest) async throws(TokenEndpointError)
        -> DeviceAuthorizationResponse
    {
        let basic = request.authorization != nil
        if let name = request.body.repeatedSingleValuedNames.first {
            throw TokenEndpointError(.invalidRequest("The \(name) parameter was given more than once."))
        }
        let client = try await clientAuthentication.authenticate(
            request.body, authorization: request.authorization, at: "/oauth2/device_authorization")
        guard client.allowDeviceCode, client.type == .native || client.type == .web else {
            throw TokenEndpointError(
                OAuthError(.unauthorizedClient, "This application is not registered for the device authorization grant."),
                usedBasicAuthentication: basic)
        }
        do {
            let scope = try await issuance.validateScope(request.body, client: client).get()
            let resources = try await issuance.namedResources(request.body).get()
            if let error = issuance.checkScope(scope, against: resources) { throw error }
            return try await startDeviceAuthorization(client: client, scope: scope, resources: resources)
        } catch let error as OAuthError {
            throw TokenEndpointError(error, usedBasicAuthentication: basic)
        } catch {
            context.logger.error("store failure at the device authorization endpoint", metadata: ["error": "\(error)"])
            throw TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic)
        }
    }

    private func startDeviceAuthorization(client: Client, scope: ScopeSet, resources: [ProtectedResource]) async throws
        -> DeviceAuthorizationResponse
    {
        let deviceCode = RandomToken.generate(.deviceCode)
        let lifetime = configuration.deviceCodeLifetime
        // A user code may collide with one still stored (one chance in 20⁸ per stored code); the
        // unique index refuses it and a new one is drawn.
        var attempt = 0
        while true {
            let userCode = UserCode.generate()
            do {
                try await devices.insertDeviceAuthorization(
                    DeviceAuthorization(
                        deviceCodeHash: RandomToken.hash(deviceCode), userCodeHash: UserCode.hash(userCode),
                        clientID: client.id, scope: scope, resources: ResourceSet(resources.map(\.uri)),
                        interval: configuration.devicePollInterval, createdAt: now, expiresAt: now.addingTimeInterval(lifetime)))
            } catch {
                attempt += 1
                if attempt < 3 { continue }
                throw error
            }
            context.event(.deviceAuthorizationRequested, ["client_id": "\(client.id)"])
            let display = UserCode.display(userCode)
            return DeviceAuthorizationResponse(
                deviceCode: deviceCode, userCode: display, verificationURI: context.issuer + "/device",
                verificationURIComplete: context.issuer + "/device?user_code=" + display, expiresIn: Int(lifetime.rounded(.up)),
                interval: configuration.devicePollInterval)
        }
    }
}
