import Foundation
import LatchkeyCore

/// One app the user has let in, as the account page lists it.
public struct ConnectedApp: Sendable {
    public var client: Client
    /// Every scope granted to it across its active grants.
    public var scope: ScopeSet
    /// When it was last authorized.
    public var authorizedAt: Date
}

/// The account page's connected apps (`/account`): reads the user's grants and their clients,
/// and revokes an app's authorization.
public struct AccountEndpoint: Sendable {
    let grants: any GrantStore
    let clients: any ClientStore
    let context: ServerContext

    /// `GET /account`: the apps the signed-in user has connected, newest first.
    public func connectedApps(userID: UserID) async throws -> [ConnectedApp] {
        var apps: [ConnectedApp] = []
        for grant in try await grants.activeGrants(userID: userID, at: context.now) {
            if let index = apps.firstIndex(where: { $0.client.id == grant.clientID }) {
                apps[index].scope = apps[index].scope.union(grant.scope)
            } else if let client = try await clients.client(id: grant.clientID) {
                apps.append(ConnectedApp(client: client, scope: grant.scope, authorizedAt: grant.createdAt))
            }
        }
        return apps
    }

    /// `POST /account/revoke`: ends every grant of the app for this user and forgets the consent.
    /// - Returns: `false` when the CSRF token is not this session's.
    public func disconnect(_ form: FormParameters, session: BrowserSession) async throws -> Bool {
        guard form.repeatedNames.isEmpty, let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken),
            let userID = session.userID, let clientID = form["client_id"]
        else { return false }
        try await grants.revokeAuthorization(userID: userID, clientID: ClientID(rawValue: clientID), at: context.now)
        context.event(.grantRevokedByUser, ["client_id": "\(clientID)", "user_id": "\(userID)"])
        return true
    }
}

extension AuthorizationServer {
    /// Deletes expired sessions, pending requests, codes and tokens (codes and tokens ten minutes
    /// after expiry, so replays are still recognised as such until then).
    public func purgeExpired() async throws -> Int {
        try await store.purgeExpired(
            at: now, retention: 600, activityRetention: configuration.activityRetention,
            unusedRegistrationRetention: configuration.dynamicRegistration.unusedRetention)
    }
}

extension AuthorizationServer {
    /// `GET /readyz`: whether the store answers and has every schema step this build knows. `false`
    /// also when the store fails or is slower than its operation timeout.
    public func isReady() async -> Bool {
        (try? await store.appliedSchemaSteps()) == SchemaMigration.all.count
    }
}

extension AuthorizationServer {
    /// The scope catalogue, for pages that describe scopes.
    public func scopeCatalogue() async throws -> [ScopeDefinition] {
        try await store.scopeCatalogue()
    }
}
