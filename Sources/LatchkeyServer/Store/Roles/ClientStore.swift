import Foundation
import LatchkeyCore

/// Registered client applications.
public protocol ClientStore: Sendable {
    /// - Throws: ``StoreError/conflict(_:)`` when the id is taken.
    func insertClient(_ client: Client) async throws
    func client(id: ClientID) async throws -> Client?
    func clients() async throws -> [Client]
    /// Whether any browser client may use the implicit grant, without reading every client.
    func implicitClientExists() async throws -> Bool
    /// How many clients were registered this way, without reading every client.
    func clientCount(registration: ClientRegistration) async throws -> Int
    /// Deletes the client with its consents, grants, codes, tokens and pending requests.
    func deleteClient(id: ClientID) async throws -> Bool
    /// Replaces a confidential client's secret hash; the old secret stops working at once.
    func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool
    /// Replaces what an administrator may edit: name, redirect URIs, scopes, links, consent
    /// text, owner and flags. The id, type, secret and creation time stay as they are.
    /// - Returns: whether the client exists.
    func updateClient(_ client: Client) async throws -> Bool
}
