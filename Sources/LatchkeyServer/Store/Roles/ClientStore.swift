import Foundation
import LatchkeyCore

/// Registered client applications.
public protocol ClientStore: Sendable {
    /// - Throws: ``StoreError/conflict(_:)`` when the id is taken.
    func insertClient(_ client: Client) async throws
    func client(id: ClientID) async throws -> Client?
    func clients() async throws -> [Client]
    /// Deletes the client with its consents, grants, codes, tokens and pending requests.
    func deleteClient(id: ClientID) async throws -> Bool
    /// Replaces a confidential client's secret hash; the old secret stops working at once.
    func setClientSecretHash(id: ClientID, secretHash: String) async throws -> Bool
}
