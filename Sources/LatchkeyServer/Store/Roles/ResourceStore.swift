import Foundation
import LatchkeyCore

/// The registered protected resources (RFC 8707).
public protocol ResourceStore: Sendable {
    /// - Throws: ``StoreError/conflict(_:)`` when a resource with this URI exists.
    func insertResource(_ resource: ProtectedResource) async throws
    /// The resources named by `uris` that are registered (the others are left out).
    func resources(uris: ResourceSet) async throws -> [ProtectedResource]
    /// Every registered resource, by URI.
    func resources() async throws -> [ProtectedResource]
    /// Deletes a resource; tokens already issued for it stay valid until they expire.
    /// - Returns: whether it existed.
    func deleteResource(uri: String) async throws -> Bool
}

extension ResourceStore {
    /// A registration that names no scope gets the scopes the registered resources accept, and
    /// `openid`: what an agent signing in to those resources needs.
    func defaultRegistrationScopes() async throws -> [String] {
        var scopes = ["openid"]
        for resource in try await resources() {
            scopes += resource.scopes.names.filter { !scopes.contains($0) }
        }
        return scopes
    }
}
