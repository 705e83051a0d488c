import Foundation
import LatchkeyCore

/// What an administrator registers for a protected resource (`latchkey resources add`).
public struct ResourceRegistration: Sendable {
    /// The resource indicator (RFC 8707 §2).
    public var uri: String
    public var name: String
    public var scopes: [String]
    public var tokenFormat: AccessTokenFormat
    public var accessTokenLifetime: Int?
    /// `access_token_signing_alg`: what signs its JWT access tokens (RS256 unless ES256 is asked for).
    public var tokenSigningAlgorithm: SigningAlgorithm

    public init(
        uri: String, name: String, scopes: [String], tokenFormat: AccessTokenFormat = .opaque, accessTokenLifetime: Int? = nil,
        tokenSigningAlgorithm: SigningAlgorithm = .rs256
    ) {
        self.tokenSigningAlgorithm = tokenSigningAlgorithm
        self.uri = uri
        self.name = name
        self.scopes = scopes
        self.tokenFormat = tokenFormat
        self.accessTokenLifetime = accessTokenLifetime
    }
}

extension Administration {
    /// Registers a protected resource that `resource` parameters may name.
    public func addResource(_ registration: ResourceRegistration) async throws -> ProtectedResource {
        guard ResourceSet.isValidIndicator(registration.uri) else {
            throw AdministrationError(
                "The resource URI must be an absolute https URI (http only on 127.0.0.1, [::1] or localhost) with no fragment.",
                field: "resource")
        }
        let name = registration.name.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.count <= 100 else {
            throw AdministrationError("--name must say, in at most 100 characters, what the resource is.", field: "name")
        }
        guard !registration.scopes.isEmpty else {
            throw AdministrationError("Give at least one --scope that tokens for this resource may carry.", field: "scopes")
        }
        let catalogue = Set(try await store.scopeCatalogue().map(\.name))
        if let unknown = registration.scopes.first(where: { !catalogue.contains($0) }) {
            throw AdministrationError(
                "The scope \(unknown) is not in the catalogue; add it first: latchkey scopes add \(unknown) --description \"…\"",
                field: "scopes")
        }
        if registration.tokenSigningAlgorithm != .rs256, registration.tokenFormat != .jwt {
            throw AdministrationError(
                "Only JWT access tokens are signed: give --token-format jwt with --token-signing-alg.",
                field: "access_token_signing_alg")
        }
        if let lifetime = registration.accessTokenLifetime {
            let longest = registration.tokenFormat == .jwt ? ProtectedResource.maximumJWTLifetime : 31_536_000
            guard (60...longest).contains(lifetime) else {
                throw AdministrationError(
                    "--access-token-lifetime must be from 60 to \(longest) seconds for \(registration.tokenFormat.rawValue) tokens.",
                    field: "access_token_lifetime")
            }
        }
        let resource = ProtectedResource(
            uri: registration.uri, name: name, scopes: ScopeSet(registration.scopes), tokenFormat: registration.tokenFormat,
            accessTokenLifetime: registration.accessTokenLifetime, tokenSigningAlgorithm: registration.tokenSigningAlgorithm,
            createdAt: now())
        do {
            try await store.insertResource(resource)
        } catch StoreError.conflict {
            throw AdministrationError("A resource \(registration.uri) is already registered.", field: "resource")
        }
        await event(
            .resourceRegistered,
            ["resource": "\(resource.uri)", "token_format": "\(resource.tokenFormat.rawValue)", "scope": "\(resource.scopes)"])
        return resource
    }

    /// Removes a resource. Tokens issued for it stay valid until they expire; new requests that
    /// name it get `invalid_target`.
    public func deleteResource(uri: String) async throws {
        guard try await store.deleteResource(uri: uri) else {
            throw AdministrationError("There is no resource \(uri); latchkey resources list shows them.")
        }
        await event(.resourceDeleted, ["resource": "\(uri)"])
    }
}
