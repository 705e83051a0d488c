import Foundation
import LatchkeyCore

/// Upstream identity providers as the console and the admin API see them.
extension Console {
    /// Every provider, by name.
    public func identityProviders() async throws -> [IdentityProvider] { try await federation.store.identityProviders() }

    public func identityProvider(name: String) async throws -> IdentityProvider? {
        try await federation.store.identityProvider(name: name)
    }

    /// Adds a provider for `caller` (a console administrator or an admin API client), its secret
    /// sealed with the key-encryption key.
    func addIdentityProvider(_ registration: IdentityProviderRegistration, by administration: Administration) async throws
        -> IdentityProvider
    {
        try await administration.addIdentityProvider(registration, keyEncryptionKey: federation.keyEncryptionKey)
    }

    /// Adds a provider from the console's Sign-in providers page, recorded as `viewer`'s doing:
    /// administrators only, as the page is.
    public func addIdentityProvider(_ registration: IdentityProviderRegistration, by viewer: ConsoleUser) async throws
        -> IdentityProvider
    {
        guard viewer.isAdmin else { throw AdministrationError("Only administrators add sign-in providers.") }
        return try await addIdentityProvider(registration, by: administration.acting(as: viewer.user))
    }

    /// A user's links to upstream providers, for the console's user page.
    public func federatedIdentities(userID: UserID) async throws -> [FederatedIdentity] {
        try await federation.store.federatedIdentities(userID: userID)
    }

    /// The redirect URI to register at a provider.
    public func federationCallback(_ name: String) -> String { federation.callbackURL(name) }
}
