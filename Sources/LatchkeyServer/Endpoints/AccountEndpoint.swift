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

extension AuthorizationServer {
    /// `GET /account`: the apps the signed-in user has connected, newest first.
    public func connectedApps(userID: UserID) async throws -> [ConnectedApp] {
        var apps: [ConnectedApp] = []
        for grant in try await store.activeGrants(userID: userID, at: now) {
            if let index = apps.firstIndex(where: { $0.client.id == grant.clientID }) {
                apps[index].scope = apps[index].scope.union(grant.scope)
            } else if let client = try await store.client(id: grant.clientID) {
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
        try await store.revokeAuthorization(userID: userID, clientID: ClientID(rawValue: clientID), at: now)
        event(.grantRevokedByUser, ["client_id": "\(clientID)", "user_id": "\(userID)"])
        return true
    }

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
    /// The user a browser session is signed in as, if any (for the pages that greet them).
    public func signedInUser(_ session: BrowserSession) async throws -> User? {
        guard let userID = session.userID, let user = try await store.user(id: userID), user.disabledAt == nil else {
            return nil
        }
        return user
    }

    /// The scope catalogue, for pages that describe scopes.
    public func scopeCatalogue() async throws -> [ScopeDefinition] {
        try await store.scopeCatalogue()
    }

    /// The name of the app a pending authorization request comes from, for the sign-in page.
    public func clientName(pendingID: String) async throws -> String? {
        try await pendingClient(pendingID: pendingID)?.name
    }

    /// The client a pending request is for, which the sign-in page names (and marks when this
    /// server has not verified it, as the consent page does).
    public func pendingClient(pendingID: String) async throws -> Client? {
        guard let pending = try await store.pendingAuthorization(id: PendingRequestID(rawValue: pendingID)) else { return nil }
        return try await store.client(id: pending.clientID)
    }
}
