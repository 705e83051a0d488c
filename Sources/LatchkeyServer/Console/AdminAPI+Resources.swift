import Foundation
import LatchkeyCore

/// The admin API's resources (`/admin/api/resources`): what `latchkey resources` does, as JSON.
/// A resource object has `resource` (the URI), `name`, `scopes`, `token_format` and, when set,
/// `access_token_lifetime` and (JWT tokens) `access_token_signing_alg`, the names `latchkey
/// resources list --json` prints.
extension Console {
    public func apiResources() async throws -> AdminAPIResponse {
        AdminAPIResponse(200, ["resources": try await catalogue.resources().map(Self.resourceObject)])
    }

    /// `POST /admin/api/resources`: 201 with the resource.
    public func apiAddResource(_ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        do {
            let input = try Self.decode(ResourceInput.self, body)
            var format = AccessTokenFormat.opaque
            if let named = input.tokenFormat {
                guard let known = AccessTokenFormat(rawValue: named) else {
                    throw AdministrationError("token_format must be opaque or jwt.", field: "token_format")
                }
                format = known
            }
            var algorithm = SigningAlgorithm.rs256
            if let named = input.accessTokenSigningAlg {
                guard let known = SigningAlgorithm(rawValue: named) else {
                    throw AdministrationError(
                        "access_token_signing_alg must be RS256 or ES256.", field: "access_token_signing_alg")
                }
                algorithm = known
            }
            let resource = try await administration.acting(as: caller).addResource(
                ResourceRegistration(
                    uri: input.resource ?? "", name: input.name ?? "", scopes: input.scopes ?? [], tokenFormat: format,
                    accessTokenLifetime: input.accessTokenLifetime, tokenSigningAlgorithm: algorithm))
            return AdminAPIResponse(201, Self.resourceObject(resource))
        } catch let error as AdministrationError {
            return .invalid(error)
        }
    }

    /// `DELETE /admin/api/resources?resource=URI` (a URI does not fit in a path segment).
    public func apiDeleteResource(uri: String?, by caller: Client) async throws -> AdminAPIResponse {
        guard let uri else { return .error(400, "invalid_request", "Name the resource: ?resource=…", field: "resource") }
        do {
            try await administration.acting(as: caller).deleteResource(uri: uri)
            return AdminAPIResponse(204, nil)
        } catch let error as AdministrationError {
            return .error(404, "not_found", error.description)
        }
    }

    static func resourceObject(_ resource: ProtectedResource) -> [String: Any] {
        var object: [String: Any] = [
            "resource": resource.uri, "name": resource.name, "scopes": resource.scopes.names,
            "token_format": resource.tokenFormat.rawValue, "created_at": Int(resource.createdAt.timeIntervalSince1970),
        ]
        if let seconds = resource.accessTokenLifetime { object["access_token_lifetime"] = seconds }
        if resource.tokenFormat == .jwt { object["access_token_signing_alg"] = resource.tokenSigningAlgorithm.rawValue }
        return object
    }
}

/// `POST /admin/api/resources`.
struct ResourceInput: MemberNamed {
    var resource: String?
    var name: String?
    var scopes: [String]?
    var tokenFormat: String?
    var accessTokenLifetime: Int?
    var accessTokenSigningAlg: String?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case resource, name, scopes
        case tokenFormat = "token_format"
        case accessTokenLifetime = "access_token_lifetime"
        case accessTokenSigningAlg = "access_token_signing_alg"
    }
}
