import Foundation
import LatchkeyCore

/// A device authorization request (RFC 8628 §3.1) from the moment the device asks for codes
/// until the device code is redeemed or expires. Both codes are kept by hash only.
public struct DeviceAuthorization: Sendable, Equatable {
    /// Where the user is in the request.
    public enum Status: String, Sendable {
        /// Waiting for someone to enter the user code.
        case pending
        /// Entered in one browser, which now owns the request: the code cannot be entered again.
        case claimed
        /// The user denied it (or the app may not be authorized by this user).
        case denied
        /// The user allowed it; an authorization code record under the same hash holds the grant.
        case approved
    }

    /// SHA-256 of the `device_code` (the same hash as ``CodeHash``).
    public var deviceCodeHash: String
    /// SHA-256 of the normalised `user_code` (eight letters, no dash).
    public var userCodeHash: String
    public var clientID: ClientID
    public var scope: ScopeSet
    /// `resource` (RFC 8707): the registered resources the tokens are for.
    public var resources: ResourceSet
    public var status: Status
    /// Seconds the device must wait between polls; grows by 5 with each `slow_down` (§3.5).
    public var interval: Int
    /// The last time the device polled, for `slow_down`; `nil` before the first poll.
    public var lastPolledAt: Date?
    public var createdAt: Date
    public var expiresAt: Date

    public init(
        deviceCodeHash: String, userCodeHash: String, clientID: ClientID, scope: ScopeSet, resources: ResourceSet = .none,
        status: Status = .pending, interval: Int, lastPolledAt: Date? = nil, createdAt: Date, expiresAt: Date
    ) {
        self.deviceCodeHash = deviceCodeHash
        self.userCodeHash = userCodeHash
        self.clientID = clientID
        self.scope = scope
        self.resources = resources
        self.status = status
        self.interval = interval
        self.lastPolledAt = lastPolledAt
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Device authorization requests (RFC 8628), shared by every instance: the device polls one
/// instance while the user's browser may reach another.
public protocol DeviceAuthorizationStore: Sendable {
    /// Stores a new request. Throws when a live request already has the same user code hash
    /// (the caller draws a new code).
    func insertDeviceAuthorization(_ authorization: DeviceAuthorization) async throws
    func deviceAuthorization(deviceCodeHash: String) async throws -> DeviceAuthorization?
    /// Moves the pending, unexpired request with this user code to `claimed` by the browser session
    /// `sessionIDHash` and returns it; `nil` when there is none (unknown, expired, decided, or
    /// claimed by another session). The session that claimed it may claim it again (a reload, a
    /// second click).
    func claimDeviceAuthorization(userCodeHash: String, by sessionIDHash: SessionIDHash, at: Date) async throws
        -> DeviceAuthorization?
    /// Sets the status of a claimed request (`denied` or `approved`); `false` when it was not claimed.
    func settleDeviceAuthorization(deviceCodeHash: String, status: DeviceAuthorization.Status) async throws -> Bool
    /// Records a poll at `at` and the interval the device must keep from now on.
    func recordDevicePoll(deviceCodeHash: String, at: Date, interval: Int) async throws
}
