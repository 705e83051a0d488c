import Foundation
import LatchkeyCore

/// An authorization request a client pushed (RFC 9126 §2), waiting for the browser to bring its
/// `request_uri` to the authorization endpoint.
public struct PushedAuthorizationRequest: Sendable, Equatable {
    /// SHA-256 of the `request_uri`: the value itself is never stored.
    public var requestURIHash: String
    /// The client that pushed it; only this client's authorization request may use it (§4).
    public var clientID: ClientID
    /// The pushed parameters, `application/x-www-form-urlencoded`, client credentials left out.
    public var parameters: String
    public var expiresAt: Date

    public init(requestURIHash: String, clientID: ClientID, parameters: String, expiresAt: Date) {
        self.requestURIHash = requestURIHash
        self.clientID = clientID
        self.parameters = parameters
        self.expiresAt = expiresAt
    }
}

/// Pushed authorization requests (RFC 9126), shared by every instance so that the push and the
/// browser's visit may reach different ones.
public protocol PushedRequestStore: Sendable {
    func insertPushedRequest(_ request: PushedAuthorizationRequest) async throws
    /// Deletes and returns the request with this hash, if `clientID` pushed it (expired or not):
    /// a `request_uri` is used once, and another client's attempt leaves it in place.
    func takePushedRequest(hash: String, clientID: ClientID) async throws -> PushedAuthorizationRequest?
}
