import Foundation
import LatchkeyCore

/// The store as the server sees it: every operation forwarded to the real store, except that a
/// key that cannot name a row (``StoreKey/isUsable``: a NUL character or an absurd length, the
/// shapes of docs/threat-model.md T35) is answered here, once for every store, as "no such row":
/// `nil`, `false`, nothing done. Nothing that holds such a key reaches SQLite (whose C API would
/// cut the text at the NUL) or PostgreSQL (which refuses NUL in `text` with an error).
///
/// Records being inserted carry keys the server made itself (random ids, hashes, validated
/// usernames), so inserts are forwarded unchecked.
public struct GuardedStore: Store {
    public let base: any Store

    /// Wraps `store`, unless it is already guarded.
    public static func wrap(_ store: any Store) -> any Store {
        store is GuardedStore ? store : GuardedStore(base: store)
    }

    // MARK: Scope catalogue
    public func scopeCatalogue() async throws -> [ScopeDefinition] { try await base.scopeCatalogue() }
    public func saveScope(_ scope: ScopeDefinition) async throws { try await base.saveScope(scope) }
    public func deleteScope(named name: String) async throws -> Bool { try await base.deleteScope(named: name) }

    // MARK: Users
    public func insertUser(_ user: User) async throws { try await base.insertUser(user) }
    public func user(id: UserID) async throws -> User? { id.isUsable ? try await base.user(id: id) : nil }
    public func user(username: Username) async throws -> User? {
        username.isUsable ? try await base.user(username: username) : nil
    }
    public func users() async throws -> [User] { try await base.users() }
    public func deleteUser(username: Username) async throws -> Bool {
        username.isUsable ? try await base.deleteUser(username: username) : false
    }
    public func setPasswordHash(username: Username, passwordHash: String) async throws -> Bool {
        username.isUsable ? try await base.setPasswordHash(username: username, passwordHash: passwordHash) : false
    }
    public func setUserProfile(id: UserID, displayName: String?, email: String?, emailVerified: Bool, at: Date) async throws
        -> Bool
    {
        id.isUsable
            ? try await base.setUserProfile(id: id, displayName: displayName, email: email, emailVerified: emailVerified, at: at)
            : false
    }
    public func setUserRole(id: UserID, role: UserRole) async throws -> Bool {
        id.isUsable ? try await base.setUserRole(id: id, role: role) : false
    }
    public func setUserDisabled(id: UserID, at disabledAt: Date?) async throws -> Bool {
        id.isUsable ? try await base.setUserDisabled(id: id, at: disabledAt) : false
    }

    // MARK: Resources
    public func insertResource(_ resource: ProtectedResource) async throws { try await base.insertResource(resource) }
    public func resources(uris: ResourceSet) async throws -> [ProtectedResource] {
        let usable = ResourceSet(uris.filter(ResourceSet.isValidIndicator))
        return usable.isEmpty ? [] : try await base.resources(uris: usable)
    }
    public func resources() async throws -> [ProtectedResource] { try await base.resources() }
    public func deleteResource(uri: String) async throws -> Bool {
        ResourceSet.isValidIndicator(uri) ? try await base.deleteResource(uri: uri) : false
    }

    // MARK: Registration
    public func insertInitialAccessToken(_ token: InitialAccessToken) async throws {
        try await base.insertInitialAccessToken(token)
    }
    public func initialAccessToken(hash: String) async throws -> InitialAccessToken? {
        hash.utf8.count == 64 && !hash.hasNUL ? try await base.initialAccessToken(hash: hash) : nil
    }
    public func initialAccessTokens() async throws -> [InitialAccessToken] { try await base.initialAccessTokens() }
    public func deleteInitialAccessToken(id: String) async throws -> Bool {
        id.utf8.count <= 64 && !id.hasNUL ? try await base.deleteInitialAccessToken(id: id) : false
    }

    // MARK: Pushed authorization requests
    public func insertPushedRequest(_ request: PushedAuthorizationRequest) async throws {
        try await base.insertPushedRequest(request)
    }
    public func takePushedRequest(hash: String, clientID: ClientID) async throws -> PushedAuthorizationRequest? {
        hash.utf8.count == 64 && !hash.hasNUL && clientID.isUsable
            ? try await base.takePushedRequest(hash: hash, clientID: clientID) : nil
    }

    // MARK: Device authorization requests
    public func insertDeviceAuthorization(_ authorization: DeviceAuthorization) async throws {
        try await base.insertDeviceAuthorization(authorization)
    }
    public func deviceAuthorization(deviceCodeHash: String) async throws -> DeviceAuthorization? {
        deviceCodeHash.isUsableHash ? try await base.deviceAuthorization(deviceCodeHash: deviceCodeHash) : nil
    }
    public func claimDeviceAuthorization(userCodeHash: String, by sessionIDHash: SessionIDHash, at: Date) async throws
        -> DeviceAuthorization?
    {
        userCodeHash.isUsableHash
            ? try await base.claimDeviceAuthorization(userCodeHash: userCodeHash, by: sessionIDHash, at: at) : nil
    }
    public func settleDeviceAuthorization(deviceCodeHash: String, status: DeviceAuthorization.Status) async throws -> Bool {
        deviceCodeHash.isUsableHash
            ? try await base.settleDeviceAuthorization(deviceCodeHash: deviceCodeHash, status: status) : false
    }
    public func recordDevicePoll(deviceCodeHash: String, at: Date, interval: Int) async throws {
        guard deviceCodeHash.isUsableHash else { return }
        try await base.recordDevicePoll(deviceCodeHash: deviceCodeHash, at: at, interval: interval)
    }

    // MARK: DPoP
    public func recordDPoPProof(hash: String, expiresAt: Date) async throws -> Bool {
        try await base.recordDPoPProof(hash: hash, expiresAt: expiresAt)
    }
    public func insertDPoPNonce(hash: String, expiresAt: Date) async throws {
        try await base.insertDPoPNonce(hash: hash, expiresAt: expiresAt)
    }
    public func isLiveDPoPNonce(hash: String, at: Date) async throws -> Bool {
        hash.isUsableHash ? try await base.isLiveDPoPNonce(hash: hash, at: at) : false
    }

    // MARK: Clients
    public func insertClient(_ client: Client) async throws { try await base.insertClient(client) }
    public func client(id: ClientID) async throws -> Client? { id.isUsable ? try await base.client(id: id) : nil }
    public func clients() async throws -> [Client] { try await base.clients() }
    public func implicitClientExists() async throws -> Bool { try await base.implicitClientExists() }
    public func clientCount(registration: ClientRegistration) async throws -> Int {
        try await base.clientCount(registration: registration)
    }
    public func deleteClient(id: ClientID) async throws -> Bool { id.isUsable ? try await base.deleteClient(id: id) : false }
    public func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool {
        id.isUsable ? try await base.setClientSecretHash(id: id, secretHash: secretHash) : false
    }
    public func updateClient(_ client: Client) async throws -> Bool {
        client.id.isUsable ? try await base.updateClient(client) : false
    }

    // MARK: Browser sessions and pending requests
    public func insertSession(_ session: BrowserSession) async throws { try await base.insertSession(session) }
    public func session(idHash: SessionIDHash) async throws -> BrowserSession? {
        idHash.isUsable ? try await base.session(idHash: idHash) : nil
    }
    public func replaceSession(oldIDHash: SessionIDHash?, with session: BrowserSession) async throws {
        try await base.replaceSession(oldIDHash: oldIDHash.flatMap { $0.isUsable ? $0 : nil }, with: session)
    }
    public func touchSession(idHash: SessionIDHash, at: Date, expiresAt: Date) async throws {
        if idHash.isUsable { try await base.touchSession(idHash: idHash, at: at, expiresAt: expiresAt) }
    }
    public func deleteSession(idHash: SessionIDHash) async throws {
        if idHash.isUsable { try await base.deleteSession(idHash: idHash) }
    }
    public func sessions(userID: UserID) async throws -> [BrowserSession] {
        userID.isUsable ? try await base.sessions(userID: userID) : []
    }
    public func deleteSessions(userID: UserID) async throws {
        if userID.isUsable { try await base.deleteSessions(userID: userID) }
    }
    public func insertPendingAuthorization(_ pending: PendingAuthorization) async throws {
        try await base.insertPendingAuthorization(pending)
    }
    public func pendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        id.isUsable ? try await base.pendingAuthorization(id: id) : nil
    }
    public func takePendingAuthorization(id: PendingRequestID) async throws -> PendingAuthorization? {
        id.isUsable ? try await base.takePendingAuthorization(id: id) : nil
    }

    // MARK: Consent
    public func consent(userID: UserID, clientID: ClientID) async throws -> ConsentRecord? {
        userID.isUsable && clientID.isUsable ? try await base.consent(userID: userID, clientID: clientID) : nil
    }
    public func saveConsent(_ consent: ConsentRecord) async throws { try await base.saveConsent(consent) }

    // MARK: Codes, grants and tokens
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        try await base.insertAuthorizationCode(code)
    }

    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord, whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        try await base.insertAuthorizationCode(code, whileAccessEpoch: accessEpoch)
    }
    public func authorizationCode(hash: CodeHash) async throws -> AuthorizationCodeRecord? {
        hash.isUsable ? try await base.authorizationCode(hash: hash) : nil
    }
    public func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date)
        async throws -> Bool
    {
        codeHash.isUsable
            ? try await base.redeemAuthorizationCode(codeHash: codeHash, grant: grant, tokens: tokens, at: at) : false
    }
    public func token(hash: TokenHash) async throws -> TokenRecord? { hash.isUsable ? try await base.token(hash: hash) : nil }
    public func rotateRefreshToken(hash: TokenHash, successors: [TokenRecord], at: Date) async throws -> Bool {
        hash.isUsable ? try await base.rotateRefreshToken(hash: hash, successors: successors, at: at) : false
    }
    public func reissueWithinGrace(originalHash: TokenHash, retiredHash: TokenHash, successors: [TokenRecord], at: Date)
        async throws -> Bool
    {
        guard originalHash.isUsable, retiredHash.isUsable else { return false }
        return try await base.reissueWithinGrace(
            originalHash: originalHash, retiredHash: retiredHash, successors: successors, at: at)
    }
    public func revokeGrant(id: GrantID, at: Date) async throws {
        if id.isUsable { try await base.revokeGrant(id: id, at: at) }
    }
    public func grant(id: GrantID) async throws -> GrantRecord? { id.isUsable ? try await base.grant(id: id) : nil }
    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws {
        try await base.insertGrant(grant, tokens: tokens)
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord], whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        try await base.insertGrant(grant, tokens: tokens, whileAccessEpoch: accessEpoch)
    }
    public func revokeToken(hash: TokenHash, at: Date) async throws {
        if hash.isUsable { try await base.revokeToken(hash: hash, at: at) }
    }
    public func activeGrants(userID: UserID, at: Date) async throws -> [GrantRecord] {
        userID.isUsable ? try await base.activeGrants(userID: userID, at: at) : []
    }
    public func activeGrantCounts(at: Date) async throws -> [ClientID: Int] { try await base.activeGrantCounts(at: at) }
    public func revokeAuthorization(userID: UserID, clientID: ClientID, at: Date) async throws {
        if userID.isUsable, clientID.isUsable { try await base.revokeAuthorization(userID: userID, clientID: clientID, at: at) }
    }

    // MARK: Throttling
    public func recordFailure(key: ThrottleKey, at: Date, window: TimeInterval) async throws -> ThrottleWindow {
        // Keys are made by the server (a prefix and a hash or an address), never taken raw from a request.
        try await base.recordFailure(key: key, at: at, window: window)
    }
    public func failures(key: ThrottleKey, at: Date) async throws -> ThrottleWindow? {
        try await base.failures(key: key, at: at)
    }
    public func clearFailures(key: ThrottleKey) async throws { try await base.clearFailures(key: key) }
    public func forgiveFailure(key: ThrottleKey, at: Date) async throws { try await base.forgiveFailure(key: key, at: at) }
    public func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws
        -> (Client?, ThrottleWindow?)
    {
        // An unusable id names no client: count it as the unknown client it is.
        guard id.isUsable else { return (nil, try await base.failures(key: unknownKey, at: at)) }
        return try await base.clientAndFailures(id: id, knownKey: knownKey, unknownKey: unknownKey, at: at)
    }

    // MARK: Housekeeping
    public func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int {
        try await base.purgeExpired(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: unusedRegistrationRetention)
    }

    public func appliedSchemaSteps() async throws -> Int { try await base.appliedSchemaSteps() }

    // MARK: Audit events
    public func insertAuditEvents(_ events: [AuditEvent]) async throws { try await base.insertAuditEvents(events) }
    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] { try await base.auditEvents(query) }

    // MARK: Signing keys (written only by the server itself, never from a request)
    public func signingKeys(at: Date) async throws -> [SigningKeyRecord] { try await base.signingKeys(at: at) }
    public func insertSigningKey(_ key: SigningKeyRecord, retiredKeysPublishedUntil: Date) async throws {
        try await base.insertSigningKey(key, retiredKeysPublishedUntil: retiredKeysPublishedUntil)
    }
}
